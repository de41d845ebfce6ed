package modification

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/modification"
	"github.com/volplane/volplane/internal/stacktest"
)

// checkInvariants waits until no invariant of attributes classes is broken
// across the cluster; every test ends with it.
func (e *env) checkInvariants() {
	e.t.Helper()
	stacktest.Eventually(e.t, "no attributes class invariant violated", func() string {
		return strings.Join(e.violations(), "; ")
	}, nil)
}

// violations are the broken invariants, for every Bound claim of the
// driver with nothing in progress: its current class is its PV's, no
// modify condition is left on it, and the driver holds every parameter of
// that class for the volume.
func (e *env) violations() []string {
	claims, err := e.client.CoreV1().PersistentVolumeClaims("").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, c := range claims.Items {
		if c.Status.Phase != corev1.ClaimBound || c.Status.ModifyVolumeStatus != nil {
			continue
		}
		pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != hostpath.DriverName {
			continue
		}
		name, pvClass := c.Namespace+"/"+c.Name, ptr.Deref(pv.Spec.VolumeAttributesClassName, "")
		if current := modification.CurrentClass(&c); current != pvClass {
			out = append(out, fmt.Sprintf("claim %s at rest has class %q, its PV %q", name, current, pvClass))
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == corev1.PersistentVolumeClaimVolumeModifyingVolume || cond.Type == corev1.PersistentVolumeClaimVolumeModifyVolumeError {
				out = append(out, fmt.Sprintf("claim %s at rest keeps condition %s", name, cond.Type))
			}
		}
		if problem := e.heldBy(pv, pvClass); problem != "" {
			out = append(out, problem)
		}
	}
	return out
}

// heldBy says how the driver's parameters for pv's volume miss a parameter
// of class ("" if they do not, or the class is gone).
func (e *env) heldBy(pv *corev1.PersistentVolume, class string) string {
	if class == "" {
		return ""
	}
	vac, err := e.client.StorageV1().VolumeAttributesClasses().Get(e.ctx, class, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	held, _ := bed.driver.MutableParameters(pv.Spec.CSI.VolumeHandle)
	for k, v := range vac.Parameters {
		if held[k] != v {
			return fmt.Sprintf("PV %s has class %s but the driver holds %s=%q", pv.Name, class, k, held[k])
		}
	}
	return ""
}
