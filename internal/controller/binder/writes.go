package binder

import (
	"context"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/volplane/volplane/internal/binding"
)

// Every write goes through these helpers: they skip writes that change
// nothing (a nil update) and remember what the API server returned as the
// newest copy, so the next sync never works from an older one.

func (c *Controller) updateVolumeOr(ctx context.Context, cur, upd *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if upd == nil {
		return cur, nil
	}
	out, err := c.client.CoreV1().PersistentVolumes().Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return cur, err
	}
	return c.storeVolume(out), nil
}

func (c *Controller) updateVolumeStatusOr(ctx context.Context, cur, upd *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if upd == nil {
		return cur, nil
	}
	out, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return cur, err
	}
	return c.storeVolume(out), nil
}

// storeVolume records a PV we wrote. A PV that became Available is offered
// to the waiting claims through its volume sync: its own informer event will
// not trigger one (see newest.isOwnWrite).
func (c *Controller) storeVolume(pv *v1.PersistentVolume) *v1.PersistentVolume {
	pv = c.newPV.Wrote(pv.Name, pv)
	c.mu.Lock()
	c.index.Upsert(pv)
	c.mu.Unlock()
	if pv.Status.Phase == v1.VolumeAvailable {
		c.volumeQ.Add(pv.Name)
	}
	return pv
}

func (c *Controller) updateClaimOr(ctx context.Context, cur, upd *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	if upd == nil {
		return cur, nil
	}
	return c.updateClaim(ctx, upd)
}

func (c *Controller) updateClaimStatusOr(ctx context.Context, cur, upd *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	if upd == nil {
		return cur, nil
	}
	return c.updateClaimStatus(ctx, upd)
}

// updateClaim writes a claim's spec/metadata; a nil claim writes nothing.
func (c *Controller) updateClaim(ctx context.Context, claim *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	if claim == nil {
		return nil, nil
	}
	out, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return claim, err
	}
	return c.storeClaim(out), nil
}

// updateClaimStatus writes a claim's status; a nil claim writes nothing.
func (c *Controller) updateClaimStatus(ctx context.Context, claim *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	if claim == nil {
		return nil, nil
	}
	out, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return claim, err
	}
	return c.storeClaim(out), nil
}

func (c *Controller) storeClaim(claim *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	claim = c.newClaim.Wrote(binding.ClaimKey(claim), claim)
	c.mu.Lock()
	c.waiting.update(claim)
	c.mu.Unlock()
	return claim
}

// Reads. Listers first, then our newest copies on top.

func (c *Controller) volume(name string) (*v1.PersistentVolume, error) {
	pv, err := c.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.newPV.Observe(name, pv), nil
}

func (c *Controller) claim(namespace, name string) (*v1.PersistentVolumeClaim, error) {
	claim, err := c.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.newClaim.Observe(namespace+"/"+name, claim), nil
}

func (c *Controller) claimClass(claim *v1.PersistentVolumeClaim) (*storagev1.StorageClass, error) {
	name := binding.ClaimClass(claim)
	if name == "" {
		return nil, nil
	}
	class, err := c.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return class, err
}

func (c *Controller) defaultClass() (*storagev1.StorageClass, error) {
	classes, err := c.classes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return binding.DefaultClass(classes), nil
}

func (c *Controller) podsUsing(namespace, claimName string) []*v1.Pod {
	objs, err := c.pods.ByIndex(podsByClaim, namespace+"/"+claimName)
	if err != nil {
		return nil
	}
	pods := make([]*v1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*v1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods
}
