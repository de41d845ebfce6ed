package binder

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/resourceversion"
)

// Every write goes through these helpers. They share one contract:
//
//   - They take the copy the caller holds (cur) and the change a binding step
//     returned (upd); a nil upd means the object already has the wanted state
//     and nothing is written.
//   - They return the copy to carry on with: the API server's answer after a
//     write, cur when nothing was written (a no-op or a failed write). Never
//     nil for a non-nil cur, so callers chain steps and name the object in
//     their errors without checking.
//   - What the API server returned is remembered as the newest copy, so the
//     next sync never works from an older one, unless the object was deleted
//     meanwhile (see stillListed).

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
//
// Under load the informer may deliver a later change (a deletionTimestamp)
// before the write's answer is handled here; the listed copy then wins, or
// the index would offer a PV being deleted as free until its next change.
func (c *Controller) storeVolume(pv *v1.PersistentVolume) *v1.PersistentVolume {
	c.mu.Lock()
	listedPV, err := c.pvs.Get(pv.Name)
	listed := stillListed(pv, listedPV, err)
	if listed {
		pv = recordWrite(c.newPV, pv.Name, pv, listedPV)
		c.index.Upsert(pv)
	}
	c.mu.Unlock()
	if listed && pv.Status.Phase == v1.VolumeAvailable {
		c.volumeQ.Add(pv.Name)
	}
	return pv
}

func (c *Controller) updateClaimOr(ctx context.Context, cur, upd *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	if upd == nil {
		return cur, nil
	}
	out, err := c.client.CoreV1().PersistentVolumeClaims(upd.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return cur, err
	}
	return c.storeClaim(out), nil
}

func (c *Controller) updateClaimStatusOr(ctx context.Context, cur, upd *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	if upd == nil {
		return cur, nil
	}
	out, err := c.client.CoreV1().PersistentVolumeClaims(upd.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return cur, err
	}
	return c.storeClaim(out), nil
}

// storeClaim records a claim we wrote, as storeVolume does a PV.
func (c *Controller) storeClaim(claim *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	key := binding.ClaimKey(claim)
	c.mu.Lock()
	defer c.mu.Unlock()
	listed, err := c.claims.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
	if !stillListed(claim, listed, err) {
		return claim
	}
	claim = recordWrite(c.newClaim, key, claim, listed)
	c.waiting.Update(claim)
	return claim
}

// recordWrite returns the copy to carry on with after a write: its answer,
// recorded as the newest, unless the informer already lists that version or
// a later one. The listed copy then serves: recording the answer would keep
// a second copy of the object (with its managedFields, which the informer
// drops) until its next change, since the informer event that lets Newest
// forget it has already passed. Under load a third of the answers came
// after their event: at 100,000 binds, about 80 MB.
func recordWrite[T metav1.Object](n *loop.Newest[T], key string, written, listed T) T {
	if written.GetResourceVersion() == listed.GetResourceVersion() || resourceversion.Older(written, listed) {
		return listed
	}
	return n.Wrote(key, written)
}

// stillListed reports whether the informer still lists the object a write
// returned (same UID). A write's answer can arrive after the informer has
// delivered the object's delete; recording it then would bring a deleted PV
// back into the index (offered to claims forever) or a deleted claim back
// into the waiting list. The informer removes an object from its store
// before it calls the delete handler, and the store helpers read the lister
// and record under c.mu, which the delete handlers also hold while they
// forget the object: either the store finds the object gone and skips, or
// the handler that follows undoes its record.
func stillListed(written, listed metav1.Object, err error) bool {
	return err == nil && listed.GetUID() == written.GetUID()
}
