package e2e

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/manager"
)

// bindAndRelease binds a new claim "data" to a new PV and deletes the claim.
func bindAndRelease(e *env, pv *v1.PersistentVolume) (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
	e.t.Helper()
	pv = e.availablePV(pv)
	e.createClaim(e.claim("data", "1Gi"))
	e.waitBound("data", pv.Name)
	c := e.getClaim("data")
	e.deleteClaim("data")
	return pv, c
}

// Retain: the PV is Released and stays so, claimRef kept, so the data and
// the record of whose it was survive until an administrator acts.
func TestRetainVolumeStaysReleasedWithItsClaimRef(t *testing.T) {
	e := newEnv(t)
	pv, c := bindAndRelease(e, e.pv("data", "1Gi"))
	e.waitPVPhase(pv.Name, v1.VolumeReleased)
	e.stays("Retain PV stays Released", 3*time.Second, func() string {
		got := e.getPV(pv.Name)
		if got.Status.Phase != v1.VolumeReleased || claimRefUID(got) != c.UID {
			return fmt.Sprintf("phase %s claimRef %s, want Released with the old claim's UID", got.Status.Phase, describeRef(got.Spec.ClaimRef))
		}
		return ""
	})
	e.noEvents("PersistentVolume", pvEventNamespace, pv.Name,
		binding.EventVolumeFailedDelete, binding.EventVolumeFailedRecycle, binding.EventVolumeUnknownReclaimPolicy)
}

// Delete on a static hostPath PV: nothing here can delete it (no in-tree
// volume plugins), so the PV is Failed with a Warning saying so.
func TestDeletePolicyOnStaticHostPathVolumeFails(t *testing.T) {
	e := newEnv(t)
	pv, _ := bindAndRelease(e, e.pv("data", "1Gi", pvPolicy(v1.PersistentVolumeReclaimDelete)))
	msg := fmt.Sprintf("error getting deleter volume plugin for volume %q: no volume plugin matched", pv.Name)
	got := e.waitPVPhase(pv.Name, v1.VolumeFailed)
	e.waitPVEvent(pv.Name, v1.EventTypeWarning, binding.EventVolumeFailedDelete, msg)
	if got.Status.Message != msg {
		t.Errorf("PV status message %q, want %q", got.Status.Message, msg)
	}
	time.Sleep(quietPeriodForEvent)
	if evs := e.binderEvents("PersistentVolume", pvEventNamespace, pv.Name, binding.EventVolumeFailedDelete); len(evs) != 1 || evs[0].Count != 1 {
		t.Errorf("VolumeFailedDelete recorded %v, want once", summarize(evs))
	}
}

// Delete on a CSI PV is the CSI provisioner's job: the binder marks it
// Released and leaves it alone (no event, no deletion, no Failed).
func TestDeletePolicyOnCSIVolumeIsLeftToTheExternalProvisioner(t *testing.T) {
	e := newEnv(t)
	pv, c := bindAndRelease(e, e.pv("data", "1Gi", pvPolicy(v1.PersistentVolumeReclaimDelete), pvCSI("x.csi.example")))
	e.waitPVPhase(pv.Name, v1.VolumeReleased)
	e.stays("CSI PV stays Released, untouched", 3*time.Second, func() string {
		got, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, pv.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return "the binder deleted the PV"
		case err != nil:
			return err.Error()
		case got.DeletionTimestamp != nil:
			return "the PV is being deleted"
		case got.Status.Phase != v1.VolumeReleased || claimRefUID(got) != c.UID:
			return fmt.Sprintf("phase %s claimRef %s", got.Status.Phase, describeRef(got.Spec.ClaimRef))
		}
		return ""
	})
	if evs := e.events("PersistentVolume", pvEventNamespace, pv.Name); len(evs) != 0 {
		t.Errorf("events on a PV handed to its provisioner: %v", summarize(evs))
	}
}

// Recycle: the binder scrubs the volume with a pod; when the pod succeeds
// the PV is Available again, its claimRef gone, and the pod is removed.
func TestRecycledVolumeBecomesAvailableWhenScrubSucceeds(t *testing.T) {
	e := newEnv(t)
	pv, _ := bindAndRelease(e, e.pv("data", "1Gi", pvPolicy(v1.PersistentVolumeReclaimRecycle)))
	pod := e.waitPod(recyclerNamespace, "recycler-for-"+pv.Name)
	t.Cleanup(func() { e.forceDeletePod(recyclerNamespace, pod.Name) })
	assertRecyclerPod(t, pod, pv)
	if got := e.getPV(pv.Name); got.Status.Phase != v1.VolumeReleased {
		t.Errorf("PV phase %s while scrubbing, want Released", got.Status.Phase)
	}

	e.finishPod(recyclerNamespace, pod.Name, v1.PodSucceeded, "")
	e.waitPVEvent(pv.Name, v1.EventTypeNormal, "VolumeRecycled", "Volume recycled")
	got := e.waitPVPhase(pv.Name, v1.VolumeAvailable)
	if got.Spec.ClaimRef != nil || hasAnnotation(got.ObjectMeta, annBoundByCtrl) {
		t.Errorf("recycled PV claimRef %s annotations %v, want both cleared", describeRef(got.Spec.ClaimRef), got.Annotations)
	}
	e.eventually("recycler pod removed", func() string {
		_, err := e.client.CoreV1().Pods(recyclerNamespace).Get(e.ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("pod still there (%v)", err)
	})

	// Free again: a new claim can have it.
	e.createClaim(e.claim("next", "1Gi"))
	e.waitBound("next", pv.Name)
}

// Recycle that fails leaves the PV Failed with a Warning; it is not retried.
func TestRecycledVolumeFailsWhenScrubFails(t *testing.T) {
	e := newEnv(t)
	pv, _ := bindAndRelease(e, e.pv("data", "1Gi", pvPolicy(v1.PersistentVolumeReclaimRecycle)))
	pod := e.waitPod(recyclerNamespace, "recycler-for-"+pv.Name)
	t.Cleanup(func() { e.forceDeletePod(recyclerNamespace, pod.Name) })

	e.finishPod(recyclerNamespace, pod.Name, v1.PodFailed, "disk on fire")
	msg := "Recycle failed: recycler pod " + pod.Name + " failed: disk on fire"
	e.waitPVEvent(pv.Name, v1.EventTypeWarning, binding.EventVolumeFailedRecycle, msg)
	got := e.waitPVPhase(pv.Name, v1.VolumeFailed)
	if got.Status.Message != msg {
		t.Errorf("PV status message %q, want %q", got.Status.Message, msg)
	}
	e.stays("a failed scrub is not retried", 3*time.Second, func() string {
		if _, err := e.client.CoreV1().Pods(recyclerNamespace).Get(e.ctx, pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("recycler pod present (%v)", err)
		}
		if got := e.getPV(pv.Name); got.Status.Phase != v1.VolumeFailed {
			return "phase " + string(got.Status.Phase)
		}
		return ""
	})
}

// Recycle waits while a pod still uses the deleted claim's name: scrubbing
// a volume in use would destroy live data. Once the pod is gone, it scrubs.
func TestRecycleWaitsForPodsUsingTheClaim(t *testing.T) {
	e := newEnv(t)
	pv := e.availablePV(e.pv("data", "1Gi", pvPolicy(v1.PersistentVolumeReclaimRecycle)))
	e.createClaim(e.claim("data", "1Gi"))
	e.waitBound("data", pv.Name)
	e.createPod("app", "data")
	e.deleteClaim("data")

	e.waitPVPhase(pv.Name, v1.VolumeReleased)
	e.waitPVEvent(pv.Name, v1.EventTypeNormal, binding.EventVolumeFailedRecycle, "Volume is used by pods: "+e.ns+"/app")
	e.stays("no scrub while the pod lives", 3*time.Second, func() string {
		_, err := e.client.CoreV1().Pods(recyclerNamespace).Get(e.ctx, "recycler-for-"+pv.Name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Sprintf("recycler pod created while app uses the volume (%v)", err)
		}
		return ""
	})

	e.forceDeletePod(e.ns, "app")
	pod := e.waitPod(recyclerNamespace, "recycler-for-"+pv.Name)
	t.Cleanup(func() { e.forceDeletePod(recyclerNamespace, pod.Name) })
	e.finishPod(recyclerNamespace, pod.Name, v1.PodSucceeded, "")
	e.waitPVPhase(pv.Name, v1.VolumeAvailable)
}

// A pod under the recycler's name that volplane did not create for this
// release (here a user's, already Succeeded) proves nothing: it is deleted
// with the reference's warning, volplane's own scrub pod takes its place,
// and the volume stays Released until that pod succeeds.
func TestRecycleReplacesARecyclerPodItDidNotCreate(t *testing.T) {
	e := newEnv(t)
	pv := e.availablePV(e.pv("data", "1Gi", pvPolicy(v1.PersistentVolumeReclaimRecycle)))
	lookalike, err := e.client.CoreV1().Pods(recyclerNamespace).Create(e.ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "recycler-for-" + pv.Name},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "c", Image: neverRunningImage}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create lookalike recycler pod: %v", err)
	}
	t.Cleanup(func() { e.forceDeletePod(recyclerNamespace, lookalike.Name) })
	e.finishPod(recyclerNamespace, lookalike.Name, v1.PodSucceeded, "")

	e.createClaim(e.claim("data", "1Gi"))
	e.waitBound("data", pv.Name)
	e.deleteClaim("data")
	e.waitPVEvent(pv.Name, v1.EventTypeWarning, binding.EventVolumeFailedRecycle, binding.MsgOldRecyclerPod)
	var ours *v1.Pod
	e.eventually("a scrub pod of volplane's own", func() string {
		pod, err := e.client.CoreV1().Pods(recyclerNamespace).Get(e.ctx, lookalike.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			return err.Error()
		case pod.UID == lookalike.UID:
			return "the lookalike pod is still there"
		}
		ours = pod
		return ""
	})
	assertRecyclerPod(t, ours, pv)
	e.stays("Released while our scrub has not succeeded", 2*time.Second, func() string {
		if got := e.getPV(pv.Name); got.Status.Phase != v1.VolumeReleased {
			return "phase " + string(got.Status.Phase)
		}
		return ""
	})

	e.finishPod(recyclerNamespace, ours.Name, v1.PodSucceeded, "")
	e.waitPVPhase(pv.Name, v1.VolumeAvailable)
	e.waitPVEvent(pv.Name, v1.EventTypeNormal, "VolumeRecycled", "Volume recycled")
}

func assertRecyclerPod(t *testing.T, pod *v1.Pod, pv *v1.PersistentVolume) {
	t.Helper()
	// Admission adds the service account token volume; look for ours.
	found := false
	for _, vol := range pod.Spec.Volumes {
		found = found || vol.HostPath != nil && vol.HostPath.Path == pv.Spec.HostPath.Path
	}
	if !found {
		t.Errorf("recycler pod mounts no hostPath %s", pv.Spec.HostPath.Path)
	}
	if pod.Spec.RestartPolicy != v1.RestartPolicyNever {
		t.Errorf("recycler pod restartPolicy %s, want Never", pod.Spec.RestartPolicy)
	}
}

// A scrub that outlives --recycle-timeout leaves the PV Failed with a
// Warning naming the pod, and the pod is told to go.
func TestRecycleThatOutlivesItsTimeoutFails(t *testing.T) {
	withoutSharedBinder(t)
	e := newEnv(t)
	runManager(t, manager.Config{Workers: 2, ResyncPeriod: 2 * time.Second, RecycleTimeout: 2 * time.Second})

	pv, _ := bindAndRelease(e, e.pv("data", "1Gi", pvPolicy(v1.PersistentVolumeReclaimRecycle)))
	pod := e.waitPod(recyclerNamespace, "recycler-for-"+pv.Name)
	t.Cleanup(func() { e.forceDeletePod(recyclerNamespace, pod.Name) })
	msg := "Recycle failed: recycler pod " + pod.Name + " did not finish in 2s"
	e.waitPVEvent(pv.Name, v1.EventTypeWarning, binding.EventVolumeFailedRecycle, msg)
	if got := e.waitPVPhase(pv.Name, v1.VolumeFailed); got.Status.Message != msg {
		t.Errorf("PV status message %q, want %q", got.Status.Message, msg)
	}
	e.eventually("recycler pod being deleted", func() string {
		p, err := e.client.CoreV1().Pods(recyclerNamespace).Get(e.ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil {
			return ""
		}
		return fmt.Sprintf("pod still running (%v)", err)
	})
}
