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
	"github.com/volplane/volplane/internal/controller/loop"
)

// Recycling scrubs a Released volume with a Pod and makes it Available again.
// The scrub runs asynchronously: the volume sync creates the recycler pod,
// and later syncs (woken by the pod's updates, or by a timer at its deadline)
// read its outcome. What the scrub needs to remember (which pod is ours) is
// recorded on the PV, not in memory, so a restart resumes it; see
// binding.AnnRecyclerPod for why a pod is trusted only by its recorded UID.

const (
	// EventVolumeRecycled is recorded when a scrub succeeds.
	EventVolumeRecycled = "VolumeRecycled"
	// defaultRecyclerImage has a POSIX shell and find.
	defaultRecyclerImage = "busybox:1.37"
	// DefaultRecycleTimeout bounds a recycler pod's scrub.
	DefaultRecycleTimeout = 5 * time.Minute
)

// recycle moves a Released volume through its scrub.
// A volume whose scrub failed stays Failed until someone looks at it: unlike
// the reference, we do not start a new scrub on every resync
// (binding.ScrubOver, ScrubRemoveLeftover).
func (c *Controller) recycle(ctx context.Context, pv *v1.PersistentVolume, d binding.VolumeDecision) (loop.Result, error) {
	var source v1.VolumeSource
	if pv.Status.Phase != v1.VolumeFailed {
		// Released: the phase first, then a scrub, which needs a source.
		var err error
		if pv, err = c.updateVolumeStatusOr(ctx, pv, binding.SetVolumePhase(pv, d.Phase, d.Message)); err != nil {
			return loop.Done(), err
		}
		var ok bool
		if source, ok = binding.ScrubSource(pv); !ok {
			return loop.Done(), c.recycleFailed(ctx, pv, "No recycler plugin found for the volume!")
		}
	}
	in := binding.ScrubInput{Volume: pv, Now: c.clock.Now(), Timeout: c.recycleTimeout}
	var err error
	if in.Pod, err = c.recyclerPod(pv.Name); err != nil {
		return loop.Done(), err
	}
	sd := binding.DecideScrub(in)
	if sd.Action == binding.ScrubCheckLive {
		if in.Pod, err = c.liveRecyclerPod(ctx, pv.Name); err != nil {
			return loop.Done(), err
		}
		in.LiveChecked = true
		sd = binding.DecideScrub(in)
	}
	klog.FromContext(ctx).V(4).Info("Scrub decision", "pv", pv.Name, "decision", sd)
	return c.applyScrub(ctx, pv, in.Pod, source, sd)
}

// applyScrub performs a scrub decision. Our pod running, the volume is
// synced again at its deadline; the pod's updates bring it back sooner.
func (c *Controller) applyScrub(ctx context.Context, pv *v1.PersistentVolume, pod *v1.Pod, source v1.VolumeSource, sd binding.ScrubDecision) (loop.Result, error) {
	switch sd.Action {
	case binding.ScrubStart:
		return c.startRecycler(ctx, pv, source)
	case binding.ScrubRemoveOther:
		return loop.Done(), c.removeOtherRecycler(ctx, pv, pod, sd.Message)
	case binding.ScrubSucceeded:
		return loop.Done(), c.recycleSucceeded(ctx, pv)
	case binding.ScrubFailed:
		return loop.Done(), c.recycleFailed(ctx, pv, sd.Message)
	case binding.ScrubWait:
		return loop.After(sd.RetryAfter), nil
	case binding.ScrubRemoveLeftover:
		return loop.Done(), c.deleteRecycler(ctx, pv.Name)
	}
	// ScrubWaitOtherGone: the pod's delete event brings the volume back
	// (onPod), and the resync revisits a Released Recycle volume anyway.
	// ScrubOver: nothing is left to do.
	return loop.Done(), nil
}

// startRecycler creates our recycler pod, then records its UID on the PV.
// A crash (or a failed write) between the two leaves a pod nobody recorded:
// the next sync removes it and starts again, which costs a scrub but never
// trusts an unproven one.
func (c *Controller) startRecycler(ctx context.Context, pv *v1.PersistentVolume, source v1.VolumeSource) (loop.Result, error) {
	pod := binding.RecyclerPod(pv, source, c.recycleNamespace, c.recycleImage)
	created, err := c.client.CoreV1().Pods(c.recycleNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A pod of that name the cache has not shown us yet. Ours or not,
		// it is not recorded for this release: the next sync, which sees
		// it, removes it.
		return loop.Done(), fmt.Errorf("create recycler pod for %s: a pod of that name exists; deciding again: %w", pv.Name, err)
	}
	if err != nil {
		return loop.Done(), fmt.Errorf("create recycler pod for %s: %w", pv.Name, err)
	}
	if _, err = c.updateVolumeOr(ctx, pv, binding.RecordScrub(pv, created)); err != nil {
		return loop.Done(), fmt.Errorf("record recycler pod %s on %s: %w", created.UID, pv.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Recycler started", "pv", pv.Name, "pod", klog.KObj(created), "uid", created.UID)
	// Judged at its deadline if no update of the pod brings it back first.
	return loop.After(c.recycleTimeout + time.Second), nil
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
	err := c.client.CoreV1().Pods(c.recycleNamespace).Delete(ctx, binding.RecyclerPodName(pvName), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete recycler pod for %s: %w", pvName, err)
	}
	return nil
}
