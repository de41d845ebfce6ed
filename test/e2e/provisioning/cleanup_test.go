package provisioning

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// No pvc-protection or pv-protection controller runs here: the tests play
// them, removing only those finalizers, so that every other finalizer must
// be removed by the loop that owns it.

// deleteClaim deletes a claim as a user would and drops its protection
// finalizer as the pvc-protection controller would with no pod using it.
func (e *env) deleteClaim(name string) {
	e.t.Helper()
	err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{})
	if err != nil {
		e.t.Fatalf("delete claim %s: %v", name, err)
	}
	if err := e.dropClaimFinalizers(name, pvcProtection); err != nil {
		e.t.Fatalf("claim %s: %v", name, err)
	}
}

// dropClaimFinalizers removes the named finalizers (all of them when none
// is named) from a claim, if it still exists.
func (e *env) dropClaimFinalizers(name string, which ...string) error {
	claims := e.client.CoreV1().PersistentVolumeClaims(e.ns)
	return dropFinalizers(which,
		func() (*corev1.PersistentVolumeClaim, error) { return claims.Get(e.ctx, name, metav1.GetOptions{}) },
		func(c *corev1.PersistentVolumeClaim) error {
			_, err := claims.Update(e.ctx, c, metav1.UpdateOptions{})
			return err
		})
}

// dropPVFinalizers is dropClaimFinalizers for a PV.
func (e *env) dropPVFinalizers(name string, which ...string) error {
	pvs := e.client.CoreV1().PersistentVolumes()
	return dropFinalizers(which,
		func() (*corev1.PersistentVolume, error) { return pvs.Get(e.ctx, name, metav1.GetOptions{}) },
		func(pv *corev1.PersistentVolume) error {
			_, err := pvs.Update(e.ctx, pv, metav1.UpdateOptions{})
			return err
		})
}

// dropFinalizers reads an object, removes finalizers and writes it back,
// again on conflicts; an object already gone has none left to remove.
func dropFinalizers[T metav1.Object](which []string, get func() (T, error), update func(T) error) error {
	for attempt := 0; ; attempt++ {
		obj, err := get()
		if err == nil {
			kept := without(obj.GetFinalizers(), which)
			if len(kept) == len(obj.GetFinalizers()) {
				return nil
			}
			obj.SetFinalizers(kept)
			err = update(obj)
		}
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err) || attempt == 20:
			return err
		}
	}
}

// without returns list minus the names in drop; an empty drop drops all.
func without(list, drop []string) []string {
	if len(drop) == 0 {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(list), func(f string) bool { return slices.Contains(drop, f) })
}

// waitClaimGone waits until the claim no longer exists.
func (e *env) waitClaimGone(name string) {
	e.t.Helper()
	e.eventually("claim "+name+" gone", func() string {
		c, ok := find(e.t, "claim", e.client.CoreV1().PersistentVolumeClaims(e.ns).Get, name)
		if !ok {
			return ""
		}
		return fmt.Sprintf("still there, deleting since %v, finalizers %v", c.DeletionTimestamp, c.Finalizers)
	})
}

// waitPVDeleted waits until the provisioner deleted the PV and removed its
// finalizer; the pv-protection finalizer is then dropped, so the PV goes.
func (e *env) waitPVDeleted(name string) {
	e.t.Helper()
	e.eventually("PV "+name+" deleted", func() string {
		pv := e.findPV(name)
		switch {
		case pv == nil:
			return ""
		case pv.DeletionTimestamp == nil:
			return fmt.Sprintf("not deleted; phase %s", pv.Status.Phase)
		case slices.Contains(pv.Finalizers, pvFinalizer):
			return "deleted but still holds " + pvFinalizer
		}
		if err := e.dropPVFinalizers(name, pvProtection); err != nil {
			return err.Error()
		}
		return "terminating; pv-protection dropped"
	})
}

// removeEverything takes away what the test made, whatever state it is in:
// pods, claims, PVs and backend volumes.
func (e *env) removeEverything() {
	pods := e.client.CoreV1().Pods(e.ns)
	_ = pods.DeleteCollection(e.ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	claims, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).List(e.ctx, metav1.ListOptions{})
	if err == nil {
		for _, c := range claims.Items {
			_ = e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, c.Name, metav1.DeleteOptions{})
			_ = e.dropClaimFinalizers(c.Name)
		}
	}
	for _, pv := range e.ourPVs() {
		_ = e.client.CoreV1().PersistentVolumes().Delete(e.ctx, pv.Name, metav1.DeleteOptions{})
		_ = e.dropPVFinalizers(pv.Name)
	}
	for _, v := range e.newVolumes() {
		e.deleteBackendVolume(v)
	}
}
