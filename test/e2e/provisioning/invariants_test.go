package provisioning

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/hostpath"
)

// settleTimeout is how long the checker lets work in flight (a deletion
// between its steps) finish before it reports what is still wrong.
const settleTimeout = 5 * time.Second

// checkInvariants fails the test if the cluster and the backend hold a
// state the loops must never leave behind at rest:
//   - a PV that is the volume of two Bound claims;
//   - a Bound claim whose PV is missing or does not point back at it;
//   - a backend volume made during the test with no PV for it (leaked), or
//     on a node its PV is not accessible from (a second copy);
//   - any PV of the driver, whatever its claim or reclaim policy, whose
//     backend volume is gone while the PV is not being deleted (data
//     deleted under a PV that still promises it). PVs already broken when
//     the test began were reported by the test that broke them.
func (e *env) checkInvariants() {
	e.t.Helper()
	var wrong []string
	for end := time.Now().Add(settleTimeout); ; time.Sleep(4 * pollEvery) {
		if wrong = e.invariantViolations(); len(wrong) == 0 || time.Now().After(end) {
			break
		}
	}
	for _, v := range wrong {
		e.t.Errorf("invariant: %s", v)
	}
}

// snapshot is the cluster's PVs and claims and the backend's volumes, read
// at one moment.
type snapshot struct {
	pvs     []corev1.PersistentVolume
	claims  []corev1.PersistentVolumeClaim
	backend []backendVolume
}

func (e *env) snapshot() snapshot {
	e.t.Helper()
	pvList, err := e.client.CoreV1().PersistentVolumes().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("invariants: list PVs: %v", err)
	}
	claims, err := e.client.CoreV1().PersistentVolumeClaims("").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("invariants: list claims: %v", err)
	}
	return snapshot{pvs: pvList.Items, claims: claims.Items, backend: e.backendVolumes()}
}

func (e *env) invariantViolations() []string {
	e.t.Helper()
	s := e.snapshot()
	pvs := map[string]*corev1.PersistentVolume{}
	for i := range s.pvs {
		pvs[s.pvs[i].Name] = &s.pvs[i]
	}
	out := boundClaimViolations(s.claims, pvs)
	out = append(out, leakedVolumes(s, e.earlier)...)
	for _, pv := range pvsWithoutBackend(s) {
		if !e.brokenBefore[pv.UID] {
			out = append(out, fmt.Sprintf("%s PV %s names backend volume %s, which does not exist",
				pv.Spec.PersistentVolumeReclaimPolicy, pv.Name, pv.Spec.CSI.VolumeHandle))
		}
	}
	return out
}

// byHandle maps the volume handles of the driver's PVs to their PVs.
func byHandle(pvs []corev1.PersistentVolume) map[string]*corev1.PersistentVolume {
	out := map[string]*corev1.PersistentVolume{}
	for i := range pvs {
		if pv := &pvs[i]; pv.Spec.CSI != nil && pv.Spec.CSI.Driver == hostpath.DriverName {
			out[pv.Spec.CSI.VolumeHandle] = pv
		}
	}
	return out
}

// leakedVolumes are the backend volumes not in earlier that no PV owns:
// none names them, or the one that does is accessible from other nodes.
func leakedVolumes(s snapshot, earlier map[string]bool) []string {
	handles := byHandle(s.pvs)
	var out []string
	for _, v := range s.backend {
		pv := handles[v.id]
		switch {
		case earlier[v.id]:
		case pv == nil:
			out = append(out, "backend volume "+v.String()+" has no PV")
		case pv.Spec.NodeAffinity != nil && !slices.Contains(affinityNodes(pv), v.node):
			out = append(out, fmt.Sprintf("backend volume %s: its PV %s is accessible from %v only", v, pv.Name, affinityNodes(pv)))
		}
	}
	return out
}

// pvsWithoutBackend are the driver's PVs, not being deleted, whose backend
// volume does not exist.
func pvsWithoutBackend(s snapshot) []*corev1.PersistentVolume {
	have := map[string]bool{}
	for _, v := range s.backend {
		have[v.id] = true
	}
	var out []*corev1.PersistentVolume
	for handle, pv := range byHandle(s.pvs) {
		if pv.DeletionTimestamp == nil && !have[handle] {
			out = append(out, pv)
		}
	}
	return out
}

// brokenPVs are the UIDs of the PVs pvsWithoutBackend reports now.
func brokenPVs(s snapshot) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, pv := range pvsWithoutBackend(s) {
		out[pv.UID] = true
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
