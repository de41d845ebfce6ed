package attachdetach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/attachment"
)

// apply makes the plan's writes in the reference's order: node status
// first (a volume leaves volumesAttached before it is detached, and if
// that write fails nothing is detached), then detaches, then attaches,
// then the events.
// f are the facts the plan was made from (the node, the decision's scope).
func (c *Controller) apply(ctx context.Context, node string, f attachment.Facts, plan attachment.Plan) error {
	var errs []error
	statusErr := c.writeStatus(ctx, node, plan)
	if statusErr == nil {
		errs = append(errs, c.detach(ctx, node, f.Node.Exists, plan.Detach))
	} else {
		errs = append(errs, statusErr)
	}
	errs = append(errs, c.attach(ctx, plan))
	if statusErr == nil {
		c.record(node, plan.Events, f.Scope)
	}
	c.metrics.observe(node, plan.Counts, f.Scope)
	return errors.Join(errs...)
}

// writeStatus patches node.status.volumesAttached with the whole list when
// it changed. A deleted node has no status to write.
func (c *Controller) writeStatus(ctx context.Context, node string, plan attachment.Plan) error {
	if !plan.StatusChanged {
		return nil
	}
	patch, err := volumesAttachedPatch(plan.VolumesAttached)
	if err != nil {
		return err
	}
	out, err := c.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("updating volumesAttached of node %s: %w", node, err)
	}
	c.newestNode.Wrote(node, out)
	c.mu.Lock()
	c.pace[node] = c.pace[node].Written(c.clock.Now())
	c.mu.Unlock()
	klog.FromContext(ctx).V(3).Info("Updated volumesAttached", "volumes", len(plan.VolumesAttached))
	return nil
}

// volumesAttachedPatch is a merge patch replacing the whole list: a merge
// patch replaces lists, so the result is exactly the list given, and the
// other status fields (the kubelet's) are left alone. An empty list is
// written as [] (null would be the same to the API server; [] reads
// better in audit logs).
func volumesAttachedPatch(vols []v1.AttachedVolume) ([]byte, error) {
	if vols == nil {
		vols = []v1.AttachedVolume{}
	}
	return json.Marshal(map[string]any{"status": map[string]any{"volumesAttached": vols}})
}

// detach deletes the attachments to detach. A normal detach is checked
// against the node read live first, as the reference's safe-to-detach
// check does: the cache may not show yet that the node uses it again.
// existed says whether the decision saw the node.
func (c *Controller) detach(ctx context.Context, node string, existed bool, detaches []attachment.Detach) error {
	var errs []error
	var inUse []v1.UniqueVolumeName
	checked := false
	for _, d := range detaches {
		if d.Attachment == nil {
			c.detachedInTree(ctx, d)
			continue
		}
		if c.isInFlight(d.Attachment.Name, deleteWrite) {
			continue
		}
		if !d.Reason.Forced() && !checked {
			var err error
			if inUse, err = c.liveInUse(ctx, node, existed); err != nil {
				return err
			}
			checked = true
		}
		if !d.Reason.Forced() && slices.Contains(inUse, d.Volume) {
			errs = append(errs, fmt.Errorf("volume %s is still in use by node %s, according to its live status", d.Volume, node))
			continue
		}
		errs = append(errs, c.deleteAttachment(ctx, d))
	}
	return errors.Join(errs...)
}

// liveInUse reads the node's volumesInUse from the API server. A node the
// decision already knew deleted uses nothing (the reference skips the check
// then). One deleted since the decision was made is an error: the next
// sync decides again from what the node last reported in its delete event,
// which the cache the decision read may not have shown yet (the reference
// would detach at once; that would skip the unmount wait of a volume the
// node was still using).
func (c *Controller) liveInUse(ctx context.Context, node string, existed bool) ([]v1.UniqueVolumeName, error) {
	n, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && !existed:
		return nil, nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("node %s was deleted after the detach was decided; deciding again from its last status", node)
	case err != nil:
		return nil, fmt.Errorf("reading node %s before detach: %w", node, err)
	}
	return n.Status.VolumesInUse, nil
}

func (c *Controller) deleteAttachment(ctx context.Context, d attachment.Detach) error {
	// Counted as the detach starts, before it is done, as the reference's
	// reconciler counts it once DetachVolume started: whoever sees the
	// attachment go sees it counted.
	if d.Reason.Forced() {
		c.metrics.forcedDetaches.WithLabelValues(d.Reason.String()).Inc()
	}
	err := c.client.StorageV1().VolumeAttachments().Delete(ctx, d.Attachment.Name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil // an earlier sync deleted it; the cache does not show it yet
	case err != nil:
		return fmt.Errorf("deleting VolumeAttachment %s: %w", d.Attachment.Name, err)
	}
	c.wrote(d.Attachment.Name, deleteWrite)
	klog.FromContext(ctx).Info("Detaching volume", "pv", attachment.SourceName(d.Attachment),
		"attachment", d.Attachment.Name, "reason", d.Reason.String())
	return nil
}

// detachedInTree counts and logs the detach of an in-tree volume whose
// detach does nothing (attachment.KindInTree): leaving volumesAttached,
// which the status write before it did, was all of it.
func (c *Controller) detachedInTree(ctx context.Context, d attachment.Detach) {
	if d.Reason.Forced() {
		c.metrics.forcedDetaches.WithLabelValues(d.Reason.String()).Inc()
	}
	klog.FromContext(ctx).Info("Detached in-tree volume", "volume", d.Volume, "reason", d.Reason.String())
}

// attach creates the attachments; one made meanwhile (by an earlier sync
// whose write the cache does not show yet) is fine. A single-node volume
// is reserved first, and a create that may have been made keeps its
// reservation: see reserve.
func (c *Controller) attach(ctx context.Context, plan attachment.Plan) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, createsAtOnce)
	for _, a := range plan.Create {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := c.create(ctx, a); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createsAtOnce bounds the creates one sync has in flight. They go out
// together, as the reference's operation executor starts one attach per
// volume at once: made one after another, a node with a hundred new pods
// waited out a hundred round trips before its last attachment existed.
// Each volume's create is checked and reserved alone (reserve), so their
// order among themselves does not matter.
const createsAtOnce = 16

// create makes one attachment of the plan, unless it is being made or
// already there.
func (c *Controller) create(ctx context.Context, a attachment.Attach) error {
	va := a.Attachment
	if c.isInFlight(va.Name, createWrite) || c.inStore(va.Name) {
		return nil
	}
	if err := c.reserve(ctx, a); err != nil {
		return err
	}
	out, err := c.client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
	switch {
	case err == nil && a.SingleNode:
		c.created(a.Volume, out)
	case err != nil && !apierrors.IsAlreadyExists(err):
		if notCreated(err) {
			c.release(a.Volume, va.Name)
		}
		return fmt.Errorf("creating VolumeAttachment %s: %w", va.Name, err)
	}
	c.wrote(va.Name, createWrite)
	klog.FromContext(ctx).V(2).Info("Attaching volume", "pv", attachment.SourceName(va), "driver", va.Spec.Attacher,
		"attachment", va.Name)
	return nil
}

// inStore says whether the informer's store holds the attachment now. The
// plan was decided from the store read earlier: if the informer delivered
// our own create in between, its handler already ended the in-flight entry
// (settled), so isInFlight says no while the decision still lacks the
// attachment. The handler runs only after the store holds the object, so
// checking the store after isInFlight leaves no window for a second create
// (the bench saw 1,002 creates, two of them AlreadyExists, for 1,000
// attaches).
func (c *Controller) inStore(name string) bool {
	_, exists, err := c.vas.GetByKey(name)
	return err == nil && exists
}

// notCreated says the API server refused a create outright; any other
// error (a timeout, a lost connection) may hide an attachment it made.
func notCreated(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsUnauthorized(err) || apierrors.IsTooManyRequests(err)
}

// record emits the plan's events not already emitted for the node: an
// event is recorded once for as long as its key keeps being decided (the
// keys of volumes a scoped plan did not decide on stay as they were).
func (c *Controller) record(node string, events []attachment.Event, scope map[v1.UniqueVolumeName]bool) {
	c.mu.Lock()
	before := c.reported[node]
	now := make(map[string]v1.UniqueVolumeName, len(events))
	for key, u := range before {
		if scope != nil && !scope[u] {
			now[key] = u // not decided on: still reported
		}
	}
	var fresh []attachment.Event
	for _, e := range events {
		now[e.Key] = e.Volume
		if _, done := before[e.Key]; !done {
			fresh = append(fresh, e)
		}
	}
	if len(now) == 0 {
		delete(c.reported, node)
	} else {
		c.reported[node] = now
	}
	c.mu.Unlock()
	for _, e := range fresh {
		c.recorder.Event(e.Pod, e.Type, e.Reason, e.Message)
	}
}

// The in-flight memory: after we delete (or create) an attachment, a sync
// before the informer shows it gone (or there) must not write it again.
// An entry ends when the informer shows the write, or after inFlightTTL in
// case the event that would end it never comes (the object was made and
// deleted again by others in between).
const inFlightTTL = 15 * time.Second

// writeKind is which write of a VolumeAttachment: its create (an attach)
// or its delete (a detach).
type writeKind int

const (
	createWrite writeKind = iota
	deleteWrite
)

type write struct {
	kind writeKind
	at   time.Time
}

func (c *Controller) wrote(name string, kind writeKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight[name] = write{kind: kind, at: c.clock.Now()}
}

// isInFlight says whether the write about to be made (a delete, or a
// create) was made already and the informer does not show it yet.
func (c *Controller) isInFlight(name string, kind writeKind) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.inFlight[name]
	if ok && c.clock.Since(w.at) > inFlightTTL {
		delete(c.inFlight, name)
		return false
	}
	return ok && w.kind == kind
}

// settled forgets the write the informer now shows done: an attachment
// seen present ends a pending create (createWrite), one seen deleted ends
// a pending delete (deleteWrite). It says whether one was pending.
func (c *Controller) settled(name string, shown writeKind) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.inFlight[name]; ok && w.kind == shown {
		delete(c.inFlight, name)
		return true
	}
	return false
}

// The exclusive reservations. A single-node volume is reserved for a node
// before its attachment is created, and stays reserved until the
// informer's store shows that attachment (from then on every reserve sees
// it there) or shows it gone, or the API server says it does not exist.
// reserve checks the reservation and the store under one lock, and the
// informer's handler ends a reservation only after the store holds the
// attachment, so no order of workers lets a decision made on older facts
// create a second attachment: either the reservation or the store stops it.

type reservation struct {
	node string
	name string    // the attachment being made
	uid  types.UID // its UID once the create answered
	at   time.Time
}

// reserve reserves a single-node volume for the attachment's node, or says
// why not: another node's reservation, or another node's attachment of the
// volume (through any PersistentVolume naming it) in the informer's store.
func (c *Controller) reserve(ctx context.Context, a attachment.Attach) error {
	if !a.SingleNode {
		return nil
	}
	if err := c.recheck(ctx, a.Volume); err != nil {
		return err
	}
	node := a.Attachment.Spec.NodeName
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.exclusive[a.Volume]; ok && r.node != node {
		return fmt.Errorf("volume %s is being attached to node %s", a.Volume, r.node)
	}
	if other := c.attachedElsewhere(a.Volume, node); other != "" {
		return fmt.Errorf("volume %s is already exclusively attached to node %s", a.Volume, other)
	}
	c.exclusive[a.Volume] = reservation{node: node, name: a.Attachment.Name, at: c.clock.Now()}
	return nil
}

// attachedElsewhere is a node other than node that the informer's store
// shows an attachment of the volume on, "" if none.
func (c *Controller) attachedElsewhere(volume v1.UniqueVolumeName, node string) string {
	for _, pv := range c.volumesNamed(volume) {
		for _, va := range c.attachmentsOf(pv.Name) {
			if va.Spec.NodeName != node {
				return va.Spec.NodeName
			}
		}
	}
	return ""
}

// recheck asks the API server about a reservation held longer than
// inFlightTTL whose attachment the store still does not show (the
// informer lags, or missed it in a relist): gone, the reservation ends;
// there, it is renewed (the store will show it).
func (c *Controller) recheck(ctx context.Context, volume v1.UniqueVolumeName) error {
	c.mu.Lock()
	r, ok := c.exclusive[volume]
	c.mu.Unlock()
	if !ok || c.clock.Since(r.at) <= inFlightTTL {
		return nil
	}
	_, err := c.client.StorageV1().VolumeAttachments().Get(ctx, r.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.release(volume, r.name)
	case err != nil:
		return fmt.Errorf("checking the reservation of volume %s: %w", volume, err)
	default:
		c.mu.Lock()
		if cur, ok := c.exclusive[volume]; ok && cur.name == r.name {
			cur.at = c.clock.Now()
			c.exclusive[volume] = cur
		}
		c.mu.Unlock()
	}
	return nil
}

// release ends the volume's reservation if it is still the one for the
// named attachment.
func (c *Controller) release(volume v1.UniqueVolumeName, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.exclusive[volume]; ok && r.name == name {
		delete(c.exclusive, volume)
	}
}

// shown ends the reservations of the named attachment once the
// informer's store holds it, live: from then on the store stops another
// node. An event is handled after the store changed, maybe long after, so
// the store is read again here: the event may be about an earlier
// attachment of that name, since deleted, while the one reserved for is
// not in the store yet. With the UID of our create known, only that
// object counts.
func (c *Controller) shown(name string) {
	obj, exists, err := c.vas.GetByKey(name)
	va, ok := obj.(*storagev1.VolumeAttachment)
	if err != nil || !exists || !ok || va.DeletionTimestamp != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for volume, r := range c.exclusive {
		if r.name == name && (r.uid == "" || r.uid == va.UID) {
			delete(c.exclusive, volume)
		}
	}
}

// created records the UID of the attachment a reservation was made for.
func (c *Controller) created(volume v1.UniqueVolumeName, va *storagev1.VolumeAttachment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.exclusive[volume]; ok && r.name == va.Name {
		r.uid = va.UID
		c.exclusive[volume] = r
	}
}
