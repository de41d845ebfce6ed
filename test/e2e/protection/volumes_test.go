package protection

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// createStaticPV creates an administrator's hostPath PV of policy Retain,
// pre-bound to the claim when claim is not "". Its class is the namespace's
// own, so no other test's claim can take it.
func (e *env) createStaticPV(name, claim string) *corev1.PersistentVolume {
	e.t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              e.ns,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claimSpec("").Resources.Requests[corev1.ResourceStorage]},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
		},
	}
	if claim != "" {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: e.ns, Name: claim}
	}
	out, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{})
	e.noError(err, "create PV "+name)
	e.t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumes().Delete(e.ctx, out.Name, metav1.DeleteOptions{})
	})
	return out
}

// A Bound volume deleted by its administrator stays (Terminating, Bound)
// while its claim exists; once the claim is gone the volume is Released
// and goes.
func TestBoundVolumeDeletionWaitsUntilItsClaimIsGone(t *testing.T) {
	e := newEnv(t)
	pv := e.createStaticPV("data", "data")
	e.createClaim("data", e.ns)
	e.waitBound("data")

	e.noError(e.client.CoreV1().PersistentVolumes().Delete(e.ctx, pv.Name, metav1.DeleteOptions{}), "delete PV")
	e.holds("Bound volume kept", keepFor, func() string {
		v := e.findPV(pv.Name)
		switch {
		case v == nil:
			return "PV gone while Bound"
		case v.DeletionTimestamp == nil || !has(v.Finalizers, pvProtection):
			return "PV not Terminating with its finalizer: " + join(v.Finalizers)
		case v.Status.Phase != corev1.VolumeBound:
			return "PV phase " + string(v.Status.Phase)
		}
		return ""
	})
	e.deleteClaim("data")
	e.waitClaimGone("data")
	e.waitPVGone(pv.Name)
}

// What a user does on `volplane up`: delete a claim of a Delete class. The
// claim, its PV and the backend volume all go, with no other action.
func TestDeletedClaimOfDeleteClassIsReclaimedWithNoUserAction(t *testing.T) {
	e := newEnv(t)
	e.createClaim("data", classDelete)
	_, pv := e.waitBound("data")
	handle := pv.Spec.CSI.VolumeHandle
	if !e.backendHas(handle) {
		t.Fatalf("backend volume %s missing after provisioning", handle)
	}

	e.deleteClaim("data")
	e.waitClaimGone("data")
	e.waitPVGone(pv.Name)
	if e.backendHas(handle) {
		t.Errorf("backend volume %s still there", handle)
	}
}

// Deleting the claim of a Retain class leaves its volume Released, with its
// data, and nothing more happens.
func TestDeletedClaimOfRetainClassLeavesItsVolumeReleased(t *testing.T) {
	e := newEnv(t)
	e.createClaim("data", classRetain)
	_, pv := e.waitBound("data")
	t.Cleanup(func() { e.removeRetained(pv) })

	e.deleteClaim("data")
	e.waitClaimGone("data")
	released := func() string {
		v := e.findPV(pv.Name)
		switch {
		case v == nil || v.DeletionTimestamp != nil:
			return "PV deleted"
		case v.Status.Phase != corev1.VolumeReleased:
			return "PV phase " + string(v.Status.Phase)
		case !e.backendHas(pv.Spec.CSI.VolumeHandle):
			return "backend volume gone"
		}
		return ""
	}
	e.eventually("PV Released", released)
	e.holds("PV stays Released with its data", keepFor, released)
}

// A provisioned volume deleted while Bound waits for its claim; then the
// whole chain runs: claim gone, volume Released, backend volume and PV
// deleted.
func TestBoundProvisionedVolumeDeletedFirstIsReclaimedOnceItsClaimGoes(t *testing.T) {
	e := newEnv(t)
	e.createClaim("data", classDelete)
	_, pv := e.waitBound("data")
	e.noError(e.client.CoreV1().PersistentVolumes().Delete(e.ctx, pv.Name, metav1.DeleteOptions{}), "delete PV")
	e.holds("Bound volume kept", keepFor, func() string {
		if v := e.findPV(pv.Name); v == nil || v.Status.Phase != corev1.VolumeBound {
			return fmt.Sprintf("PV %v", v)
		}
		return ""
	})

	e.deleteClaim("data")
	e.waitClaimGone("data")
	e.waitPVGone(pv.Name)
	if e.backendHas(pv.Spec.CSI.VolumeHandle) {
		t.Errorf("backend volume %s still there", pv.Spec.CSI.VolumeHandle)
	}
}

// removeRetained deletes a Retain PV and its backend volume after the test:
// nothing else would.
func (e *env) removeRetained(pv *corev1.PersistentVolume) {
	_ = e.client.CoreV1().PersistentVolumes().Delete(e.ctx, pv.Name, metav1.DeleteOptions{})
	for _, d := range bed.drivers {
		_, _ = d.DeleteVolume(e.ctx, deleteRequest(pv.Spec.CSI.VolumeHandle))
	}
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func join(list []string) string { return "[" + strings.Join(list, " ") + "]" }
