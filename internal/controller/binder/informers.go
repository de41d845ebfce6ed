package binder

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/protection"
)

func (c *Controller) registerInformers(f informers.SharedInformerFactory) error {
	pvInf := f.Core().V1().PersistentVolumes()
	claimInf := f.Core().V1().PersistentVolumeClaims()
	classInf := f.Storage().V1().StorageClasses()
	c.pvs, c.claims, c.classes = pvInf.Lister(), claimInf.Lister(), classInf.Lister()
	podInf, err := informerindex.Pods(f)
	if err != nil {
		return fmt.Errorf("binder: %w", err)
	}
	c.pods = podInf.GetIndexer()
	synced, err := loop.Register(
		loop.Handler{Informer: pvInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: c.onVolume, UpdateFunc: loop.Updated(c.onVolume), DeleteFunc: c.onVolumeDeleted}},
		loop.Handler{Informer: claimInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: c.onClaim, UpdateFunc: loop.Updated(c.onClaim), DeleteFunc: c.onClaimDeleted}},
		loop.Handler{Informer: classInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: c.onClass, UpdateFunc: loop.Updated(c.onClass)}},
		loop.Handler{Informer: podInf, Funcs: cache.ResourceEventHandlerFuncs{AddFunc: c.onPod, UpdateFunc: loop.Updated(c.onPod), DeleteFunc: c.onPod}},
	)
	if err != nil {
		return fmt.Errorf("binder: %w", err)
	}
	c.synced = synced
	return nil
}

func (c *Controller) onVolume(obj any) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		return
	}
	own := c.newPV.IsOwnWrite(pv.Name, pv)
	pv = c.newPV.Observe(pv.Name, pv)
	c.unsettledVolumes.Saw(pv.Name, binding.VolumeAtRest(pv))
	c.mu.Lock()
	c.index.Upsert(pv) // for our own write: the informer's copy in place of ours, one copy kept
	c.mu.Unlock()
	if !own { // our write's sync already decided what follows
		c.volumeQ.Add(pv.Name)
	}
}

// onVolumeDeleted forgets the PV everywhere. It forgets under c.mu, as
// storeVolume records under c.mu: see stillListed.
func (c *Controller) onVolumeDeleted(obj any) {
	pv, ok := loop.As[*v1.PersistentVolume](obj)
	if !ok {
		return
	}
	c.unsettledVolumes.Gone(pv.Name)
	c.mu.Lock()
	c.newPV.Forget(pv.Name)
	c.index.Delete(pv.Name)
	c.waiting.ForgetVolume(pv.Name)
	c.mu.Unlock()
	c.events.Forget(pv.UID)
	c.ops.done(pv.Name)
	if ref := pv.Spec.ClaimRef; ref != nil {
		// Its claim may have just lost its volume.
		c.claimQ.Add(binding.ClaimRefKey(ref))
	}
}

func (c *Controller) onClaim(obj any) {
	claim, ok := obj.(*v1.PersistentVolumeClaim)
	if !ok {
		return
	}
	key := binding.ClaimKey(claim)
	own := c.newClaim.IsOwnWrite(key, claim)
	claim = c.newClaim.Observe(key, claim)
	c.unsettledClaims.Saw(key, binding.ClaimAtRest(claim))
	c.mu.Lock()
	c.waiting.Update(claim) // for our own write: the informer's copy in place of ours
	c.mu.Unlock()
	if !own { // our write's sync already decided what follows
		c.claimQ.Add(key)
	}
}

// onClaimDeleted forgets the claim everywhere, under c.mu like
// onVolumeDeleted.
func (c *Controller) onClaimDeleted(obj any) {
	claim, ok := loop.As[*v1.PersistentVolumeClaim](obj)
	if !ok {
		return
	}
	key := binding.ClaimKey(claim)
	c.unsettledClaims.Gone(key)
	c.mu.Lock()
	c.newClaim.Forget(key)
	c.waiting.Remove(key)
	c.tallies.Forget(key)
	// Its volumes are released now: the one it names, and any whose
	// claimRef names it although the claim was deleted before it recorded
	// that volume (the resync leaves Bound volumes alone).
	released := c.index.ClaimedBy(key)
	c.mu.Unlock()
	c.events.Forget(claim.UID)
	c.ops.forget(key)
	if claim.Spec.VolumeName != "" {
		released = append(released, claim.Spec.VolumeName)
	}
	for _, name := range released {
		c.volumeQ.Add(name)
	}
}

// onClass wakes the claims that may now have a class to use (a new default)
// or a different binding mode.
func (c *Controller) onClass(obj any) {
	if _, ok := obj.(*storagev1.StorageClass); !ok {
		return
	}
	c.mu.Lock()
	keys := c.waiting.Keys()
	c.mu.Unlock()
	for _, key := range keys {
		c.claimQ.Add(key)
	}
}

// onPod re-syncs the waiting claims a pod uses: their WaitForPodScheduled
// event names the pod, and a scheduled pod is what a delayed claim waits for.
// A pod under a recycler's name re-syncs its volume, whoever made it: a pod
// we did not create must be removed before the scrub can start.
func (c *Controller) onPod(obj any) {
	pod, ok := loop.As[*v1.Pod](obj)
	if !ok {
		return
	}
	if pvName, ok := binding.RecycledVolume(pod.Name); ok && pod.Namespace == c.recycleNamespace {
		c.volumeQ.Add(pvName)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range protection.ClaimKeys(pod) {
		if c.waiting.Has(key) {
			c.claimQ.Add(key)
		}
	}
}
