package adversarial

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// (g) A claim named like the generic ephemeral claim of a pod
// (<pod>-<volume>), made by the tenant before the pod: it is not the pod's
// (the pod does not own it), so the node does not mount it for the pod,
// and it does not protect the claim from deletion.
func TestClaimNamedLikeAPodsEphemeralClaim(t *testing.T) {
	w := begin(t)
	w.evilClaim("web-cache", localClass)
	w.eventually("claim web-cache Bound", func() string {
		if bound(w.claim(evilNS, "web-cache")) {
			return ""
		}
		return "not Bound"
	})
	c := w.claim(evilNS, "web-cache")
	pv, err := w.admin.CoreV1().PersistentVolumes().Get(w.ctx, c.Spec.VolumeName, metav1.GetOptions{})
	w.must(err)
	tmpl := newClaim("", localClass)
	w.evilPod("web", pvNode(pv), corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: tmpl.Spec}}}})
	t.Logf("pod web: %q", w.podAnswered("web", "FailedMount"))
	w.notMounted(stack.VolumeDir(pvNode(pv), pv.Spec.CSI.VolumeHandle), "claim web-cache, which pod web does not own,")

	// Once it is gone, the controller manager makes the pod's own claim of
	// that name: only the tenant's (by UID) must go.
	w.evilDelete("web-cache")
	w.eventually("the tenant's claim web-cache gone (pod web does not own it)", func() string {
		now, err := w.admin.CoreV1().PersistentVolumeClaims(evilNS).Get(w.ctx, "web-cache", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && now.UID != c.UID {
			return ""
		}
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("still there, finalizers %v", now.Finalizers)
	})
	// The pod's own claim is then made and provisioned; it is left once
	// Bound (see the next test for why).
	w.eventually("pod web's own claim web-cache Bound", func() string {
		now, err := w.admin.CoreV1().PersistentVolumeClaims(evilNS).Get(w.ctx, "web-cache", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if !bound(now) {
			return "claim web-cache is " + string(now.Status.Phase)
		}
		return ""
	})
	w.verify()
}

// Found by the test above: the pod's own claim, made by the controller
// manager once the tenant's is gone, deleted (with the pod) while it is
// being provisioned and bound. Its volume must be reclaimed; on main
// a344c76 it stayed Bound to the gone claim, with no event.
func TestEphemeralClaimDeletedWhileBeingBound(t *testing.T) {
	w := begin(t)
	w.evilClaim("web-cache", localClass)
	tmpl := newClaim("", localClass)
	w.evilPod("web", w.data.node, corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: tmpl.Spec}}}})
	t.Logf("pod web: %q", w.podAnswered("web", ""))
	c := w.claim(evilNS, "web-cache")
	w.evilDelete("web-cache")
	w.eventually("the pod's own claim web-cache made", func() string {
		now, err := w.admin.CoreV1().PersistentVolumeClaims(evilNS).Get(w.ctx, "web-cache", metav1.GetOptions{})
		if err == nil && now.UID != c.UID {
			return ""
		}
		return "not yet"
	})
	w.verify()
}
