package doctor

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/test/e2e/support"
)

// The case: a pod with spec.nodeName using a WaitForFirstConsumer
// claim. doctor reports the claim as a problem, names the pod, and gives
// the steps that let the scheduler place it.
func TestDoctorReportsAPodPlacedOnANodeDirectly(t *testing.T) {
	e := newEnv(t)
	node := stack.CP.Nodes[1]
	t.Cleanup(func() {
		e.cleanUp()
		e.eventually("claim data gone", func() string {
			if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, "data", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Sprintf("still there (%v)", err)
			}
			return ""
		})
	})
	e.claim("data", "1Gi", bundle.WaitClass)
	pinned := support.Pod(e.ns, "pinned", "", "data")
	pinned.Spec.NodeName = node
	_, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pinned, metav1.CreateOptions{})
	e.must(err)
	var found *doctor.Finding
	e.eventually("doctor names pod pinned", func() string {
		r, _, _ := e.doctor()
		for i, f := range r.Findings {
			if f.Object.Kind == doctor.ObjectClaim && f.Object.Namespace == e.ns && f.Object.Name == "data" &&
				strings.Contains(f.Problem, "Pod pinned was placed on node "+node+" directly (spec.nodeName)") {
				found = &r.Findings[i]
				return ""
			}
		}
		return "no finding names pod pinned"
	})
	var commands []string
	for _, fix := range found.Fixes {
		commands = append(commands, fix.Command)
	}
	want := []string{"volplane kubectl -n " + e.ns + " get pod pinned -o yaml > pinned.yaml",
		"volplane kubectl -n " + e.ns + " replace --force -f pinned.yaml", "volplane explain pvc " + e.ns + "/data"}
	if found.Kind != doctor.KindClaimPending || found.Severity != doctor.SeverityProblem || !slices.Equal(commands, want) {
		t.Errorf("finding %+v, want a problem with fixes %q", *found, want)
	}
}
