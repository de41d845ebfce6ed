package e2e

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	byName := map[string]*v1.PersistentVolume{}
	for i := range pvs.Items {
		byName[pvs.Items[i].Name] = &pvs.Items[i]
	}
	var out []string
	owner := map[string]string{}
	for _, c := range claims.Items {
		if c.Status.Phase != v1.ClaimBound {
			continue
		}
		key := c.Namespace + "/" + c.Name
		if prev, dup := owner[c.Spec.VolumeName]; dup {
			out = append(out, "PV "+c.Spec.VolumeName+" is the volume of two Bound claims: "+prev+" and "+key)
		}
		owner[c.Spec.VolumeName] = key
		pv := byName[c.Spec.VolumeName]
		switch {
		case pv == nil:
			out = append(out, "Bound claim "+key+" names PV "+c.Spec.VolumeName+", which does not exist")
		case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != c.UID:
			out = append(out, "Bound claim "+key+": its PV "+pv.Name+" does not point back")
		}
	}
	return out
}
