package e2e

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/invariants"
)

// checkInvariants fails the test if the cluster holds a state the binder
// must never produce: a PV claimed by two Bound claims, or a Bound claim
// whose PV does not point back at it.
func checkInvariants(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	for _, v := range invariantViolations(t, client) {
		t.Errorf("invariant: %s", v)
	}
}

// invariantViolations are the binder's invariants of package invariants
// (which also checks backends, Retain and reclaim where a test knows them).
func invariantViolations(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	ctx := context.Background()
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("invariants: list PVs: %v", err)
	}
	claims, err := client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("invariants: list claims: %v", err)
	}
	return invariants.Bindings(claims.Items, pvs.Items)
}
