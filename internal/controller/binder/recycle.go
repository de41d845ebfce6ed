package binder

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
)

// Recycling scrubs a Released volume with a Pod and makes it Available again.
// The scrub runs asynchronously: the volume sync creates the recycler pod,
// and later syncs (woken by the pod's updates, or by a timer at its deadline)
// read its outcome. What the scrub needs to remember (which pod is ours) is
// recorded on the PV, not in memory, so a restart resumes it; see
// binding.AnnRecyclerPod for why a pod is trusted only by its recorded UID.

const (
	// recyclerLabel marks recycler pods with the PV they scrub (for people;
	// the binder finds them by name).
	recyclerLabel = "recycler.volplane.io/volume"
	// recyclerPrefix starts the name of every recycler pod, as in Kubernetes.
	recyclerPrefix = "recycler-for-"
	// EventVolumeRecycled is recorded when a scrub succeeds.
	EventVolumeRecycled = "VolumeRecycled"
	// defaultRecyclerImage has a POSIX shell and find.
	defaultRecyclerImage = "busybox:1.37"
	// DefaultRecycleTimeout bounds a recycler pod's scrub.
	DefaultRecycleTimeout = 5 * time.Minute
	scrubScript           = `test -e /scrub && find /scrub -mindepth 1 -delete && test -z "$(ls -A /scrub)" || exit 1`
)

func recyclerPodName(pvName string) string { return recyclerPrefix + pvName }

// recycle moves a Released volume through its scrub.
// A volume whose scrub failed stays Failed until someone looks at it: unlike
// the reference, we do not start a new scrub on every resync.
func (c *Controller) recycle(ctx context.Context, pv *v1.PersistentVolume, d binding.VolumeDecision) error {
	if pv.Status.Phase == v1.VolumeFailed {
		// Not scrubbed again; only a recycler pod whose delete failed
		// is left to remove.
		if pod, err := c.recyclerPod(pv.Name); err != nil || pod == nil || pod.DeletionTimestamp != nil {
			return err
		}
		return c.deleteRecycler(ctx, pv.Name)
	}
	pv, err := c.updateVolumeStatusOr(ctx, pv, binding.SetVolumePhase(pv, d.Phase, d.Message))
	if err != nil {
		return err
	}
	source, ok := scrubbable(pv)
	if !ok {
		return c.recycleFailed(ctx, pv, "No recycler plugin found for the volume!")
	}
	in := binding.ScrubInput{Volume: pv, Now: time.Now(), Timeout: c.recycleTimeout}
	if in.Pod, err = c.recyclerPod(pv.Name); err != nil {
		return err
	}
	sd := binding.DecideScrub(in)
	if sd.Action == binding.ScrubCheckLive {
		if in.Pod, err = c.liveRecyclerPod(ctx, pv.Name); err != nil {
			return err
		}
		in.LiveChecked = true
		sd = binding.DecideScrub(in)
	}
	klog.FromContext(ctx).V(4).Info("Scrub decision", "pv", pv.Name, "decision", sd)
	return c.applyScrub(ctx, pv, in.Pod, source, sd)
}

func (c *Controller) applyScrub(ctx context.Context, pv *v1.PersistentVolume, pod *v1.Pod, source v1.VolumeSource, sd binding.ScrubDecision) error {
	switch sd.Action {
	case binding.ScrubStart:
		return c.startRecycler(ctx, pv, source)
	case binding.ScrubRemoveOther:
		return c.removeOtherRecycler(ctx, pv, pod, sd.Message)
	case binding.ScrubSucceeded:
		return c.recycleSucceeded(ctx, pv)
	case binding.ScrubFailed:
		return c.recycleFailed(ctx, pv, sd.Message)
	case binding.ScrubWait:
		c.volumeQ.AddAfter(pv.Name, sd.RetryAfter)
	}
	// ScrubWaitOtherGone: the pod's delete event brings the volume back
	// (onPod), and the resync revisits a Released Recycle volume anyway.
	return nil
}

// scrubbable returns the volume source a recycler pod can mount: only
// hostPath and NFS volumes can be recycled, as in Kubernetes.
func scrubbable(pv *v1.PersistentVolume) (v1.VolumeSource, bool) {
	s := pv.Spec.PersistentVolumeSource
	switch {
	case s.HostPath != nil:
		return v1.VolumeSource{HostPath: s.HostPath}, true
	case s.NFS != nil:
		return v1.VolumeSource{NFS: s.NFS}, true
	}
	return v1.VolumeSource{}, false
}

func (c *Controller) recyclerPod(pvName string) (*v1.Pod, error) {
	obj, exists, err := c.pods.GetByKey(c.recycleNamespace + "/" + recyclerPodName(pvName))
	if err != nil || !exists {
		return nil, err
	}
	pod, _ := obj.(*v1.Pod)
	return pod, nil
}

// liveRecyclerPod reads the recycler pod from the API server: right after
// we created it, the cache may not hold it yet.
func (c *Controller) liveRecyclerPod(ctx context.Context, pvName string) (*v1.Pod, error) {
	pod, err := c.client.CoreV1().Pods(c.recycleNamespace).Get(ctx, recyclerPodName(pvName), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read recycler pod for %s: %w", pvName, err)
	}
	return pod, nil
}

// startRecycler creates our recycler pod, then records its UID on the PV.
// A crash (or a failed write) between the two leaves a pod nobody recorded:
// the next sync removes it and starts again, which costs a scrub but never
// trusts an unproven one.
func (c *Controller) startRecycler(ctx context.Context, pv *v1.PersistentVolume, source v1.VolumeSource) error {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: recyclerPodName(pv.Name), Namespace: c.recycleNamespace,
			Labels:      map[string]string{recyclerLabel: pv.Name},
			Annotations: map[string]string{binding.AnnRecycledClaim: string(pv.Spec.ClaimRef.UID)},
		},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name: "recycler", Image: c.recycleImage,
				Command:      []string{"/bin/sh", "-c", scrubScript},
				VolumeMounts: []v1.VolumeMount{{Name: "vol", MountPath: "/scrub"}},
			}},
			Volumes: []v1.Volume{{Name: "vol", VolumeSource: source}},
		},
	}
	created, err := c.client.CoreV1().Pods(c.recycleNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A pod of that name the cache has not shown us yet. Ours or not,
		// it is not recorded for this release: the next sync, which sees
		// it, removes it.
		return fmt.Errorf("create recycler pod for %s: a pod of that name exists; deciding again: %w", pv.Name, err)
	}
	if err != nil {
		return fmt.Errorf("create recycler pod for %s: %w", pv.Name, err)
	}
	if _, err = c.updateVolumeOr(ctx, pv, binding.RecordScrub(pv, created)); err != nil {
		return fmt.Errorf("record recycler pod %s on %s: %w", created.UID, pv.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Recycler started", "pv", pv.Name, "pod", klog.KObj(created), "uid", created.UID)
	c.volumeQ.AddAfter(pv.Name, c.recycleTimeout+time.Second)
	return nil
}

// removeOtherRecycler deletes a pod under the recycler's name that we did
// not create for this release, as the reference does, and records its
// warning. Only that very pod is deleted (UID precondition): if it was
// replaced meanwhile, the replacement is judged by the next sync. Its delete
// event brings the volume back to start our own scrub.
func (c *Controller) removeOtherRecycler(ctx context.Context, pv *v1.PersistentVolume, pod *v1.Pod, message string) error {
	uid := pod.UID
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete recycler pod %s not made for %s: %w", pod.Name, pv.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Removed a recycler pod we did not create for this release", "pv", pv.Name, "pod", klog.KObj(pod), "uid", uid)
	c.recorder.Event(pv, v1.EventTypeWarning, binding.EventVolumeFailedRecycle, message)
	return nil
}

// recycleSucceeded frees the volume: claimRef gone, phase Available.
func (c *Controller) recycleSucceeded(ctx context.Context, pv *v1.PersistentVolume) error {
	pv, err := c.updateVolumeOr(ctx, pv, binding.FinishScrubSpec(pv))
	if err != nil {
		return err
	}
	if _, err = c.updateVolumeStatusOr(ctx, pv, binding.SetVolumePhase(pv, v1.VolumeAvailable, "")); err != nil {
		return err
	}
	// The pod goes before the event, so that whoever reads the event finds
	// the scrub cleaned up; a failed delete is retried by the next sync.
	err = c.deleteRecycler(ctx, pv.Name)
	c.recorder.Event(pv, v1.EventTypeNormal, EventVolumeRecycled, "Volume recycled")
	return err
}

func (c *Controller) recycleFailed(ctx context.Context, pv *v1.PersistentVolume, message string) error {
	if _, err := c.updateVolumeStatusOr(ctx, pv, binding.SetVolumePhase(pv, v1.VolumeFailed, message)); err != nil {
		return err
	}
	err := c.deleteRecycler(ctx, pv.Name)
	c.recorder.Event(pv, v1.EventTypeWarning, binding.EventVolumeFailedRecycle, message)
	return err
}

func (c *Controller) deleteRecycler(ctx context.Context, pvName string) error {
	err := c.client.CoreV1().Pods(c.recycleNamespace).Delete(ctx, recyclerPodName(pvName), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete recycler pod for %s: %w", pvName, err)
	}
	return nil
}
