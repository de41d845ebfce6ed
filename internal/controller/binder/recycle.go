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
// read its outcome. Nothing is held in memory, so a restart resumes it.

const (
	// recyclerLabel marks recycler pods with the PV they scrub.
	recyclerLabel = "recycler.volplane.io/volume"
	// EventVolumeRecycled is recorded when a scrub succeeds.
	EventVolumeRecycled = "VolumeRecycled"
	// defaultRecyclerImage has a POSIX shell and find.
	defaultRecyclerImage = "busybox:1.37"
	scrubScript          = `test -e /scrub && find /scrub -mindepth 1 -delete && test -z "$(ls -A /scrub)" || exit 1`
)

func recyclerPodName(pvName string) string { return "recycler-for-" + pvName }

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
	pod, err := c.recyclerPod(pv.Name)
	if err != nil {
		return err
	}
	if pod == nil {
		return c.startRecycler(ctx, pv, source)
	}
	switch {
	case pod.Status.Phase == v1.PodSucceeded:
		return c.recycleSucceeded(ctx, pv)
	case pod.Status.Phase == v1.PodFailed:
		return c.recycleFailed(ctx, pv, "Recycle failed: recycler pod "+pod.Name+" failed: "+pod.Status.Message)
	case time.Since(pod.CreationTimestamp.Time) > c.recycleTimeout:
		return c.recycleFailed(ctx, pv, fmt.Sprintf("Recycle failed: recycler pod %s did not finish in %s", pod.Name, c.recycleTimeout))
	}
	c.volumeQ.AddAfter(pv.Name, c.recycleTimeout-time.Since(pod.CreationTimestamp.Time)+time.Second)
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

func (c *Controller) startRecycler(ctx context.Context, pv *v1.PersistentVolume, source v1.VolumeSource) error {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: recyclerPodName(pv.Name), Namespace: c.recycleNamespace,
			Labels: map[string]string{recyclerLabel: pv.Name},
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
	_, err := c.client.CoreV1().Pods(c.recycleNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create recycler pod for %s: %w", pv.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Recycler started", "pv", pv.Name, "pod", klog.KObj(pod))
	c.volumeQ.AddAfter(pv.Name, c.recycleTimeout+time.Second)
	return nil
}

// recycleSucceeded frees the volume: claimRef gone, phase Available.
func (c *Controller) recycleSucceeded(ctx context.Context, pv *v1.PersistentVolume) error {
	pv, err := c.updateVolumeOr(ctx, pv, binding.UnbindVolumeSpec(pv))
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
