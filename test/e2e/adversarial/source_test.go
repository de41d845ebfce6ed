package adversarial

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// noCanary fails the test if the tenant's Bound claim holds the victim's
// file: its volume was cloned from the victim's.
func (w *world) noCanary(c *corev1.PersistentVolumeClaim) {
	w.t.Helper()
	if c == nil || !bound(c) {
		return
	}
	pv, err := w.admin.CoreV1().PersistentVolumes().Get(w.ctx, c.Spec.VolumeName, metav1.GetOptions{})
	w.must(err)
	dir := stack.VolumeDir(pvNode(pv), pv.Spec.CSI.VolumeHandle)
	if _, err := os.Stat(filepath.Join(dir, canaryFile)); err == nil {
		w.t.Errorf("the tenant's claim %s holds the victim's file: its volume %s is a clone of the victim's", c.Name, pv.Name)
	}
}

// (f) A clone whose dataSourceRef names the victim's claim in the victim's
// namespace. (Without the CrossNamespaceVolumeDataSource gate the API
// server may drop the namespace: then it names a claim of the tenant's
// own namespace, which does not exist.)
func TestDataSourceRefToAnotherNamespace(t *testing.T) {
	w := begin(t)
	c := newClaim("copy", localClass)
	c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: w.data.claim.Name, Namespace: ptr.To(victimNS)}
	c, err := tenant.CoreV1().PersistentVolumeClaims(evilNS).Create(w.ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Logf("the API server refuses the claim: %v", err)
		w.verify()
		return
	}
	t.Logf("dataSourceRef as stored: %+v", c.Spec.DataSourceRef)
	got, warning := w.answered("copy", "", bound)
	t.Logf("claim copy: %s, warning %q", phase(got), warning)
	w.noCanary(got)
	w.verify()
}

// (f) A clone of the tenant's own claim that names the victim's PV (the PV
// is not bound back to it), with the binder's annotations forged on the
// source claim.
func TestCloneOfAClaimNotBoundBackToIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		victim func(*world) victimVolume
		class  string
	}{
		{"node-local", func(w *world) victimVolume { return w.data }, localClass},
		{"network", func(w *world) victimVolume { return w.shared }, networkClass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := begin(t)
			v := tc.victim(w)
			w.evilClaim("src", tc.class, volumeNamed(v.pv.Name), annotated(annBindCompleted, "yes", annBoundByController, "yes"))
			src, warning := w.answered("src", "", bound)
			t.Logf("claim src: %s, warning %q", phase(src), warning)
			w.evilClaim("copy", tc.class, func(c *corev1.PersistentVolumeClaim) {
				c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
			})
			got, warning := w.answered("copy", "", bound)
			t.Logf("claim copy: %s, warning %q", phase(got), warning)
			w.noCanary(got)
			w.verify()
		})
	}
}
