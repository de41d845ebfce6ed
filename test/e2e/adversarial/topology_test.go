package adversarial

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/provisioning"
)

func bound(c *corev1.PersistentVolumeClaim) bool { return c.Status.Phase == corev1.ClaimBound }

// placedOn fails the test if the tenant's claim got a volume on a node
// other than want.
func (w *world) placedOn(c *corev1.PersistentVolumeClaim, want, why string) {
	w.t.Helper()
	if c == nil || !bound(c) {
		return
	}
	pv, err := w.admin.CoreV1().PersistentVolumes().Get(w.ctx, c.Spec.VolumeName, metav1.GetOptions{})
	w.must(err)
	if got := pvNode(pv); got != want {
		w.t.Errorf("claim %s got volume %s on %s, yet %s", c.Name, pv.Name, got, why)
	}
}

// (b) A pin (provisioning.volplane.io/endpoint-node) written by the tenant
// on a new claim must not put its volume on a node the class forbids or
// the scheduler did not select.
func TestForgedEndpointPinPlacesNoVolumeElsewhere(t *testing.T) {
	first, second := stack.CP.Nodes[0], stack.CP.Nodes[1]
	for _, tc := range []struct {
		name, class string
		change      func(*corev1.PersistentVolumeClaim)
		why         string
	}{
		{"outside the class's allowedTopologies", firstNodeClass,
			annotated(provisioning.AnnEndpointNode, second), "the class allows " + first + " only"},
		{"off the selected node", waitClass,
			annotated(annSelectedNode, first, provisioning.AnnEndpointNode, second), "the claim's selected node is " + first},
		{"with the in-progress finalizer, off the selected node", waitClass,
			func(c *corev1.PersistentVolumeClaim) {
				annotated(annSelectedNode, first, provisioning.AnnEndpointNode, second)(c)
				withFinalizer(provisioning.ClaimFinalizer)(c)
			}, "the claim's selected node is " + first},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := begin(t)
			w.evilClaim("pinned", tc.class, tc.change)
			c, warning := w.answered("pinned", "ProvisioningFailed", bound)
			t.Logf("claim pinned: bound %t, warning %q", c != nil && bound(c), warning)
			w.placedOn(c, first, tc.why)
			w.verify()
		})
	}
}

// (c) A selected node (volume.kubernetes.io/selected-node) the tenant
// wrote by hand, outside the class's allowedTopologies: the choice is the
// user's to make upstream, but checked against the class's topology.
func TestForgedSelectedNodeOutsideAllowedTopologies(t *testing.T) {
	first, second := stack.CP.Nodes[0], stack.CP.Nodes[1]
	for _, class := range []string{firstNodeWaitClass, firstNodeClass} {
		t.Run(class, func(t *testing.T) {
			w := begin(t)
			w.evilClaim("elsewhere", class, annotated(annSelectedNode, second))
			c, warning := w.answered("elsewhere", "ProvisioningFailed", bound)
			t.Logf("claim elsewhere: bound %t, warning %q", c != nil && bound(c), warning)
			w.placedOn(c, first, "class "+class+" allows "+first+" only")
			w.verify()
		})
	}
}
