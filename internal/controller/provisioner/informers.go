package provisioner

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/provisioning"
)

func (c *Controller) registerInformers(f informers.SharedInformerFactory) error {
	pvInf := f.Core().V1().PersistentVolumes()
	claimInf := f.Core().V1().PersistentVolumeClaims()
	classInf := f.Storage().V1().StorageClasses()
	nodeInf := f.Core().V1().Nodes()
	vacInf := f.Storage().V1().VolumeAttributesClasses()
	c.read.pvs, c.read.claims, c.read.classes, c.read.nodes = pvInf.Lister(), claimInf.Lister(), classInf.Lister(), nodeInf.Lister()
	c.read.vacs = vacInf.Lister()
	synced, err := loop.Register(
		loop.Handler{Informer: pvInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: c.onVolume, UpdateFunc: loop.Updated(c.onVolume), DeleteFunc: c.onVolumeDeleted}},
		loop.Handler{Informer: claimInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: c.onClaim, UpdateFunc: c.onClaimUpdated, DeleteFunc: c.onClaimDeleted}},
		loop.Handler{Informer: classInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{}},
		loop.Handler{Informer: nodeInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{}},
		loop.Handler{Informer: vacInf.Informer(), Funcs: c.attributesHandler()},
	)
	if err != nil {
		return fmt.Errorf("provisioner: %w", err)
	}
	c.read.synced = synced
	if !c.anyDriverAttaches() {
		return nil
	}
	vaSynced, err := c.registerAttachments(f)
	if err != nil {
		return fmt.Errorf("provisioner: %w", err)
	}
	c.read.synced = append(c.read.synced, vaSynced...)
	return nil
}

// anyDriverAttaches: some driver served has PUBLISH_UNPUBLISH_VOLUME, so a
// Released PV may still be attached (only then are VolumeAttachments
// watched, as the external-provisioner does).
func (c *Controller) anyDriverAttaches() bool {
	for _, d := range c.pool.Drivers() {
		if info, _ := c.pool.Info(d); info.Publish {
			return true
		}
	}
	return false
}

// registerAttachments watches VolumeAttachments, indexed by the PV they
// attach (informerindex): a PV whose deletion waits for one to go is
// synced again when it goes.
func (c *Controller) registerAttachments(f informers.SharedInformerFactory) ([]cache.InformerSynced, error) {
	inf, err := informerindex.VolumeAttachments(f)
	if err != nil {
		return nil, fmt.Errorf("VolumeAttachment index: %w", err)
	}
	c.read.attachments = inf.GetIndexer()
	return loop.Register(loop.Handler{Informer: inf, Funcs: cache.ResourceEventHandlerFuncs{DeleteFunc: c.onAttachmentDeleted}})
}

// attachmentsOf are the VolumeAttachments naming the PV (none when no
// driver served attaches).
func (c *Controller) attachmentsOf(pv string) ([]*storagev1.VolumeAttachment, error) {
	if c.read.attachments == nil {
		return nil, nil
	}
	return informerindex.AttachmentsOf(c.read.attachments, pv)
}

func (c *Controller) onAttachmentDeleted(obj any) {
	if va, ok := loop.As[*storagev1.VolumeAttachment](obj); ok && va.Spec.Source.PersistentVolumeName != nil {
		c.queues.volumes.Add(*va.Spec.Source.PersistentVolumeName)
	}
}

// onClaim queues claims handed to a driver we serve, and claims carrying
// our finalizer whatever else changed.
func (c *Controller) onClaim(obj any) {
	claim, ok := obj.(*v1.PersistentVolumeClaim)
	if !ok {
		return
	}
	key := binding.ClaimKey(claim)
	claim = c.memory.newClaim.Observe(key, claim)
	c.memory.unsettledClaims.Saw(key, provisioning.ClaimAtRest(claim))
	if slices.Contains(claim.Finalizers, provisioning.ClaimFinalizer) || c.pool.Serves(provisioning.ClaimDriver(claim)) {
		c.queues.claims.Add(key)
	}
}

// onClaimUpdated is onClaim, except for an update that only moved the
// in-progress marks: the provisioner's own bookkeeping, whose sync already
// decided what follows. A failed attempt takes off the finalizer it put on
// (after moving the pin, if the driver had no room); waking on those
// writes retried at once, defeating the backoff (hundreds of writes a
// second for a claim the driver refuses). The event of a write may arrive
// before the write's answer, so this looks at what changed, not at who
// wrote it.
func (c *Controller) onClaimUpdated(old, cur any) {
	o, okO := old.(*v1.PersistentVolumeClaim)
	n, okN := cur.(*v1.PersistentVolumeClaim)
	if okO && okN && slices.Contains(o.Finalizers, provisioning.ClaimFinalizer) && !slices.Contains(n.Finalizers, provisioning.ClaimFinalizer) {
		c.onSourceMaybeFree(n)
	}
	if okO && okN && provisioning.OnlyMarksChanged(o, n) {
		key := binding.ClaimKey(n)
		c.memory.unsettledClaims.Saw(key, provisioning.ClaimAtRest(c.memory.newClaim.Observe(key, n)))
		return
	}
	loop.Updated(c.onClaim)(old, cur)
}

func (c *Controller) onClaimDeleted(obj any) {
	if claim, ok := loop.As[*v1.PersistentVolumeClaim](obj); ok {
		c.memory.newClaim.Forget(binding.ClaimKey(claim))
		c.memory.unsettledClaims.Gone(binding.ClaimKey(claim))
		c.onSourceMaybeFree(claim)
		if c.memory.races != nil {
			c.memory.races.settled(claim.UID)
		}
		c.memory.events.Forget(claim.UID)
		if _, ok := c.memory.creates.get(claim.UID); ok {
			c.queues.orphans.Add(string(claim.UID))
		}
	}
}

// onVolume queues our PVs, and the claim a PV of ours was made for (a PV
// appearing finishes that claim's provisioning).
func (c *Controller) onVolume(obj any) {
	pv, ok := obj.(*v1.PersistentVolume)
	if ok {
		c.memory.unsettledPVs.Saw(pv.Name, provisioning.VolumeAtRest(pv))
	}
	if !ok || !provisioning.OwnProvisioner(pv.Annotations[volumehelpers.AnnDynamicallyProvisioned], c.pool.Serves) {
		return
	}
	c.queues.volumes.Add(pv.Name)
	if ref := pv.Spec.ClaimRef; ref != nil && pv.Name == provisioning.VolumeNamePrefix+string(ref.UID) {
		c.queues.claims.Add(binding.ClaimRefKey(ref))
	}
}

func (c *Controller) onVolumeDeleted(obj any) {
	if pv, ok := loop.As[*v1.PersistentVolume](obj); ok {
		c.memory.madePVs.Forget(pv.Name)
		c.memory.unsettledPVs.Gone(pv.Name)
		c.memory.events.Forget(pv.UID)
	}
}

// resyncPending revisits what still has work to do: a safety net for
// changes no event announces (a class or node created late, a driver that
// recovered). It looks only at the objects last seen not at rest (the
// handlers keep the sets): one at rest has nothing to do whatever changed
// around it; nor does one still waiting in its queue, whose sync will read
// it anew.
func (c *Controller) resyncPending(context.Context) {
	for _, key := range c.memory.unsettledClaims.Keys() {
		if c.queues.claims.Waiting(key) {
			continue
		}
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		claim, err := c.read.claims.PersistentVolumeClaims(ns).Get(name)
		if err == nil && c.decide(claim).action != provisioning.ClaimNone {
			c.queues.claims.Add(key)
		}
	}
	for _, name := range c.memory.unsettledPVs.Keys() {
		if c.queues.volumes.Waiting(name) {
			continue
		}
		pv, err := c.read.pvs.Get(name)
		if err != nil {
			continue
		}
		if a, _ := c.volumeActionOf(pv); a != provisioning.VolumeNone {
			c.queues.volumes.Add(pv.Name)
		}
	}
}
