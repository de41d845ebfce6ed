package provisioning

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/hostpath"
)

// checkInvariants fails the test if the cluster and the backend hold a
// state the loops must never leave behind:
//   - a PV that is the volume of two Bound claims;
//   - a Bound claim whose PV is missing or does not point back at it;
//   - a backend volume made during the test with no PV for it (leaked);
//   - a PV of the test's claims whose backend volume is gone, while the PV
//     is not being deleted.
func (e *env) checkInvariants() {
	e.t.Helper()
	for _, v := range e.invariantViolations() {
		e.t.Errorf("invariant: %s", v)
	}
}

func (e *env) invariantViolations() []string {
	e.t.Helper()
	pvList, err := e.client.CoreV1().PersistentVolumes().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("invariants: list PVs: %v", err)
	}
	claims, err := e.client.CoreV1().PersistentVolumeClaims("").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("invariants: list claims: %v", err)
	}
	pvs := map[string]*corev1.PersistentVolume{}
	byHandle := map[string]*corev1.PersistentVolume{}
	for i := range pvList.Items {
		pv := &pvList.Items[i]
		pvs[pv.Name] = pv
		if pv.Spec.CSI != nil && pv.Spec.CSI.Driver == hostpath.DriverName {
			byHandle[pv.Spec.CSI.VolumeHandle] = pv
		}
	}
	var out []string
	out = append(out, boundClaimViolations(claims.Items, pvs)...)
	backend := map[string]bool{}
	for _, v := range e.backendVolumes() {
		backend[v.id] = true
		if !e.earlier[v.id] && byHandle[v.id] == nil {
			out = append(out, "backend volume "+v.String()+" has no PV")
		}
	}
	for handle, pv := range byHandle {
		ref := pv.Spec.ClaimRef
		if ref != nil && ref.Namespace == e.ns && pv.DeletionTimestamp == nil && !backend[handle] {
			out = append(out, "PV "+pv.Name+" names backend volume "+handle+", which does not exist")
		}
	}
	return out
}

// boundClaimViolations groups the Bound claims by the PV they name: one
// claim per PV, and that PV's claimRef carries the claim's UID.
func boundClaimViolations(claims []corev1.PersistentVolumeClaim, pvs map[string]*corev1.PersistentVolume) []string {
	byPV := map[string][]*corev1.PersistentVolumeClaim{}
	for i := range claims {
		if c := &claims[i]; c.Status.Phase == corev1.ClaimBound {
			byPV[c.Spec.VolumeName] = append(byPV[c.Spec.VolumeName], c)
		}
	}
	var out []string
	for name, bound := range byPV {
		if len(bound) > 1 {
			out = append(out, fmt.Sprintf("PV %s is the volume of %d Bound claims", name, len(bound)))
		}
		pv := pvs[name]
		for _, c := range bound {
			if pv == nil || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != c.UID {
				out = append(out, fmt.Sprintf("Bound claim %s/%s: PV %q is missing or does not point back", c.Namespace, c.Name, name))
			}
		}
	}
	return out
}
