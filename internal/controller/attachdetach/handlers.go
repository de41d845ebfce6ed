package attachdetach

import (
	"context"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/protection"
)

// Every event is turned into the nodes it may change a decision for, and
// the volumes on each it may change it about (pending).

// onPod wakes the pod's node about the pod's attachable volumes: those of
// its bound claims, or the whole node for an inline one or a claim whose
// volume the caches do not show. A pod of no attachable volume wakes
// nothing.
func (c *Controller) onPod(obj any) {
	pod, ok := loop.As[*v1.Pod](obj)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	var volumes []v1.UniqueVolumeName
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.PersistentVolumeClaim == nil && vol.Ephemeral == nil {
			if _, ok, err := attachment.FromInline(pod, vol); ok || err != nil {
				c.wakeAll(pod.Spec.NodeName)
				return
			}
		}
	}
	for _, key := range protection.ClaimKeys(pod) {
		ns, name, _ := strings.Cut(key, "/")
		claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
		if err != nil {
			c.wakeAll(pod.Spec.NodeName) // gone: whichever volume it had
			return
		}
		u, ok := c.claimVolume(claim)
		if !ok {
			c.wakeAll(pod.Spec.NodeName)
			return
		}
		if u != none {
			volumes = append(volumes, u)
		}
	}
	c.wake(pod.Spec.NodeName, volumes...)
}

// none is claimVolume's answer for a claim with no attachable volume.
const none v1.UniqueVolumeName = "-"

// claimVolume is the unique name of the volume the claim names (bound or
// not: a lost claim's volume is still to be detached), none when it names
// none or one that attaches nothing; false when the caches cannot tell.
func (c *Controller) claimVolume(claim *v1.PersistentVolumeClaim) (v1.UniqueVolumeName, bool) {
	if claim.Spec.VolumeName == "" {
		return none, true
	}
	pv, err := c.pvs.Get(claim.Spec.VolumeName)
	if err != nil {
		return "", false
	}
	return pvVolume(pv)
}

// pvVolume is the unique name of the PV's volume, none for a PV that
// attaches nothing, false for one that cannot be translated (the whole
// node decides, and says why).
func pvVolume(pv *v1.PersistentVolume) (v1.UniqueVolumeName, bool) {
	v, ok, err := attachment.FromPV(pv)
	switch {
	case err != nil:
		return "", false
	case !ok:
		return none, true
	}
	return v.Unique, true
}

func (c *Controller) onNode(obj any) {
	if node, ok := loop.As[*v1.Node](obj); ok {
		c.newestNode.Observe(node.Name, node)
		c.mu.Lock()
		delete(c.lastInUse, node.Name) // a node of that name is back
		c.mu.Unlock()
		c.wakeAll(node.Name)
	}
}

// onNodeUpdate syncs the node only when something a decision reads of it
// changed (attachment.NodeChange: not a heartbeat; the volumes whose
// entries changed, or all) and not by our own status patch, whose sync
// went on from the copy it wrote. It also wakes
// the pods waiting for an in-tree volume (attachment.KindInTree) the node
// no longer reports attached: with no attachment to be deleted, the
// node's status is the only news that a single-node volume is free.
func (c *Controller) onNodeUpdate(old, cur any) {
	o, okO := old.(*v1.Node)
	n, okN := cur.(*v1.Node)
	if !okO || !okN {
		return
	}
	own := c.newestNode.IsOwnWrite(n.Name, n)
	c.newestNode.Observe(n.Name, n)
	if all, volumes := attachment.NodeChange(o, n); !own && all {
		c.wakeAll(n.Name)
	} else if !own {
		c.wake(n.Name, volumes...)
	}
	c.wakeInTreeUsers(o, n.Status.VolumesAttached)
}

// wakeInTreeUsers queues the users of each in-tree volume the node
// reported attached and no longer lists in now, through its PVs or inline.
func (c *Controller) wakeInTreeUsers(node *v1.Node, now []v1.AttachedVolume) {
	for _, a := range node.Status.VolumesAttached {
		if attachment.InTreePlugin(a.Name) == "" || slices.ContainsFunc(now, func(b v1.AttachedVolume) bool { return b.Name == a.Name }) {
			continue
		}
		for _, pv := range c.volumesNamed(a.Name) {
			c.enqueueUsersOf(pv)
		}
		c.enqueueInlineUsers(a.Name)
	}
}

// onNodeDeleted keeps what the node last reported in use: its attachments
// wait for the unmount timeout unless it did not use them (the reference
// keeps its actual state the same way).
func (c *Controller) onNodeDeleted(obj any) {
	node, ok := loop.As[*v1.Node](obj)
	if !ok {
		return
	}
	c.newestNode.Forget(node.Name)
	c.mu.Lock()
	c.lastInUse[node.Name] = node.Status.VolumesInUse
	c.mu.Unlock()
	c.wakeAll(node.Name)
	c.wakeInTreeUsers(node, nil)
}

// onAttachment runs once the informer's store holds the attachment, so a
// reservation it ends is taken over by the store: whoever reserves next
// sees the attachment there. The arrival of one this loop created, as it
// created it, wakes nothing: the sync that created it decided with it
// made, and its node waits for the attacher's answer, an update.
func (c *Controller) onAttachment(obj any) {
	if va, ok := loop.As[*storagev1.VolumeAttachment](obj); ok {
		ours := c.settled(va.Name, createWrite)
		c.shown(va.Name)
		if !ours || !asCreated(va) {
			c.wakeAbout(va)
		}
	}
}

// asCreated says an attachment shows nothing since its create: not
// attached, no error, not being deleted.
func asCreated(va *storagev1.VolumeAttachment) bool {
	return !va.Status.Attached && va.Status.AttachError == nil && va.DeletionTimestamp == nil
}

// onAttachmentUpdate syncs the node only for a change a decision reads
// (attachment.AttachmentChanged: not the attacher's finalizer); the
// reservation it may end is ended by any version the store holds.
func (c *Controller) onAttachmentUpdate(old, cur any) {
	o, okO := old.(*storagev1.VolumeAttachment)
	n, okN := cur.(*storagev1.VolumeAttachment)
	if !okO || !okN {
		return
	}
	c.settled(n.Name, createWrite)
	c.shown(n.Name)
	if attachment.AttachmentChanged(o, n) {
		c.wakeAbout(n)
	}
}

// wakeAbout wakes the attachment's node about its volume: its PV's, its
// inline spec's, or, when the caches cannot tell, all of the node's.
func (c *Controller) wakeAbout(va *storagev1.VolumeAttachment) {
	src := va.Spec.Source
	switch {
	case src.PersistentVolumeName != nil:
		if pv, err := c.pvs.Get(*src.PersistentVolumeName); err == nil {
			if u, ok := pvVolume(pv); ok && u != none {
				c.wake(va.Spec.NodeName, u)
				return
			}
		}
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		// Inline volumes are decided with the whole node (readScope).
	}
	c.wakeAll(va.Spec.NodeName)
}

// onAttachmentDeleted also wakes the nodes whose pods want the volume: a
// single-node volume may attach there now.
func (c *Controller) onAttachmentDeleted(obj any) {
	va, ok := loop.As[*storagev1.VolumeAttachment](obj)
	if !ok {
		return
	}
	c.settled(va.Name, deleteWrite)
	c.wakeAbout(va)
	if pvName := va.Spec.Source.PersistentVolumeName; pvName != nil {
		if pv, err := c.pvs.Get(*pvName); err == nil {
			for _, same := range c.sameVolume(pv) {
				c.enqueueUsersOf(same)
			}
		}
	}
	if spec := va.Spec.Source.InlineVolumeSpec; spec != nil && spec.CSI != nil {
		c.enqueueInlineUsers(attachment.UniqueVolumeName(spec.CSI.Driver, spec.CSI.VolumeHandle))
	}
}

// enqueueInlineUsers wakes the nodes of the pods using the volume inline
// (whole: inline volumes are decided with the whole node).
func (c *Controller) enqueueInlineUsers(unique v1.UniqueVolumeName) {
	pods, _ := informerindex.PodsWithInline(c.pods, unique) // registered in New: cannot fail
	for _, pod := range pods {
		c.wakeAll(pod.Spec.NodeName)
	}
}

// onClaim wakes the nodes of the claim's pods about the claim's volume.
// An update wakes them about the old one too.
func (c *Controller) onClaim(obj any) {
	claim, ok := loop.As[*v1.PersistentVolumeClaim](obj)
	if !ok {
		return
	}
	u, known := c.claimVolume(claim)
	switch {
	case !known:
		c.enqueueClaimUsers(binding.ClaimKey(claim), "")
	case u != none:
		c.enqueueClaimUsers(binding.ClaimKey(claim), u)
	}
}

func (c *Controller) onClaimUpdate(old, cur any) {
	o, okO := old.(*v1.PersistentVolumeClaim)
	n, okN := cur.(*v1.PersistentVolumeClaim)
	if okO && okN && attachment.ClaimChanged(o, n) {
		c.onClaim(o)
		c.onClaim(n)
	}
}

// onVolume wakes the nodes of the PV's pods and of its attachments about
// its volume.
func (c *Controller) onVolume(obj any) {
	if pv, ok := loop.As[*v1.PersistentVolume](obj); ok {
		u, known := pvVolume(pv)
		if known && u == none {
			return
		}
		c.enqueueUsersOf(pv)
		for _, o := range c.attachmentsOf(pv.Name) {
			c.wake(o.Spec.NodeName, u) // "" when unknown: the whole node
		}
	}
}

// enqueueUsersOf wakes the nodes of the PV's pods about its volume.
func (c *Controller) enqueueUsersOf(pv *v1.PersistentVolume) {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return
	}
	if u, known := pvVolume(pv); !known || u != none {
		c.enqueueClaimUsers(binding.ClaimRefKey(ref), u)
	}
}

// enqueueClaimUsers wakes the nodes of the claim's pods about volume u
// ("": the whole node).
func (c *Controller) enqueueClaimUsers(claimKey string, u v1.UniqueVolumeName) {
	pods, _ := informerindex.PodsUsing(c.pods, claimKey) // registered in New: cannot fail
	for _, pod := range pods {
		c.wake(pod.Spec.NodeName, u)
	}
}

// sameVolume are the PersistentVolumes naming the driver and handle pv
// names, pv included: one volume, whichever PV a pod reaches it through.
func (c *Controller) sameVolume(pv *v1.PersistentVolume) []*v1.PersistentVolume {
	u, ok := attachment.VolumeOf(pv)
	if !ok {
		return []*v1.PersistentVolume{pv}
	}
	return c.volumesNamed(u)
}

// volumesNamed are the PersistentVolumes of a unique volume name.
func (c *Controller) volumesNamed(unique v1.UniqueVolumeName) []*v1.PersistentVolume {
	pvs, _ := informerindex.PVsOf(c.pvIndex, unique) // registered in New: cannot fail
	return pvs
}

func (c *Controller) attachmentsOf(pv string) []*storagev1.VolumeAttachment {
	vas, _ := informerindex.AttachmentsOf(c.vas, pv) // registered in New: cannot fail
	return vas
}

// enqueueAll queues every node and every node name an attachment names (a
// deleted node's attachments too).
func (c *Controller) enqueueAll() {
	nodes, _ := c.nodes.List(labels.Everything())
	for _, n := range nodes {
		c.wakeAll(n.Name)
	}
	for _, name := range c.vas.ListIndexFuncValues(informerindex.NodeOfAttachment) {
		c.wakeAll(name)
	}
}

// resync is the reference's desired-state populator: a periodic look at
// every node repairs whatever an event missed.
func (c *Controller) resync(context.Context) { c.enqueueAll() }
