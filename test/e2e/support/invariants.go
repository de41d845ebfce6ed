package support

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/stacktest"
)

// ReadState reads what the invariants look at: the cluster's claims, PVs
// and VolumeAttachments and the volumes of the drivers at endpoints (none:
// no backend is compared). A failed read fails the test.
func ReadState(t testing.TB, client kubernetes.Interface, endpoints ...string) invariants.State {
	t.Helper()
	s, err := checkup.ReadInvariants(context.Background(), client, endpoints)
	if err != nil {
		t.Fatalf("invariants: %v", err)
	}
	return s
}

// Holds reports each promise violations still finds broken as an error of
// the test ("invariant: ..."), once settle has passed without a round
// finding none: work in flight when the test ended (a deletion between
// its steps) may finish meanwhile. With settle 0 it asks once.
func Holds(t testing.TB, settle time.Duration, violations func() []string) {
	t.Helper()
	var wrong []string
	for end := time.Now().Add(settle); ; time.Sleep(4 * stacktest.PollEvery) {
		if wrong = violations(); len(wrong) == 0 || !time.Now().Before(end) {
			break
		}
	}
	for _, v := range wrong {
		t.Errorf("invariant: %s", v)
	}
}
