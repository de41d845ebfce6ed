package attachment

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Decide is one node's reconcile, as the reference's reconciler does it for
// every node: first the attachments no pod wants any more are detached
// where the rules allow, then the wanted ones are attached, and the node's
// volumesAttached is made to list exactly the attached volumes that are
// not being detached. A node without the ManagedAnnotation is not ours:
// nothing is decided for it.
func Decide(f Facts) Plan {
	if f.MaxWaitForUnmount <= 0 {
		f.MaxWaitForUnmount = DefaultMaxWaitForUnmount
	}
	p := Plan{UndesiredSince: map[string]time.Time{}, Counts: Counts{}}
	if f.Node.Exists && !f.Node.Managed {
		return p
	}
	desired, waits := desiredVolumes(f)
	p.Wait = waits
	scope := newScope(f)
	if scope != nil {
		maps.DeleteFunc(desired, func(u v1.UniqueVolumeName, _ *Desired) bool { return !f.Scope[u] })
	}
	r := &reconcile{f: f, p: &p, desired: desired, byName: map[string]*Desired{}, elsewhere: elsewhere(f, desired),
		inUse: set(f.Node.VolumesInUse), reported: attachedSet(f.Node.VolumesAttached)}
	for _, d := range desired {
		if d.Kind != KindInTree {
			r.byName[Name(d.Handle, d.Driver, f.Node.Name)] = d
		}
	}
	here := attachmentsHere(f, scope)
	scope.keep(f, here, &p)
	for _, name := range sortedKeys(here) {
		if va := here[name]; r.wanted(va) == nil {
			r.detach(va)
		}
	}
	for _, u := range f.Node.VolumesAttached {
		if InTreePlugin(u.Name) != "" && desired[u.Name] == nil && scope.has(u.Name) {
			r.detachInTree(u.Name)
		}
	}
	for _, name := range sortedKeys(desired) {
		r.attach(desired[name], here)
	}
	slices.SortFunc(p.VolumesAttached, func(a, b v1.AttachedVolume) int { return cmp.Compare(a.Name, b.Name) })
	adds := onlyAdds(p.VolumesAttached, f.Node.VolumesAttached)
	p.StatusChanged = f.Node.Exists && !(adds && len(p.VolumesAttached) == len(f.Node.VolumesAttached))
	if p.StatusChanged && adds && f.StatusInterval > 0 && !f.Status.WrittenAt.IsZero() {
		if wait := f.Status.WrittenAt.Add(f.Status.Interval(f.StatusInterval)).Sub(f.Now); wait > 0 {
			p.StatusChanged, p.StatusDeferred = false, true
			r.requeue(wait, added(p.VolumesAttached, f.Node.VolumesAttached)...)
		}
	}
	return p
}

// added are the volumes of want that have is without.
func added(want, have []v1.AttachedVolume) []v1.UniqueVolumeName {
	in := attachedSet(have)
	var out []v1.UniqueVolumeName
	for _, v := range want {
		if !in[v.Name] {
			out = append(out, v.Name)
		}
	}
	return out
}

// onlyAdds says whether every volume of have is still in want (with equal
// lengths: the two lists are the same set).
func onlyAdds(want, have []v1.AttachedVolume) bool {
	in := make(map[v1.AttachedVolume]bool, len(want))
	for _, v := range want {
		in[v] = true
	}
	for _, v := range have {
		if !in[v] {
			return false
		}
	}
	return true
}

type reconcile struct {
	f       Facts
	p       *Plan
	desired map[v1.UniqueVolumeName]*Desired
	// byName is each desired volume by the name of its attachment here.
	byName    map[string]*Desired
	elsewhere map[v1.UniqueVolumeName][]string // other nodes holding an attachment of the volume
	inUse     map[v1.UniqueVolumeName]bool
	reported  map[v1.UniqueVolumeName]bool
}

// attachmentsHere are the node's attachments, of PersistentVolumes and
// of inline volumes (the reference attaches a migrated inline volume with
// its translated spec in the attachment, and detaches any it finds whose
// volume no pod wants), by name.
func attachmentsHere(f Facts, scope *scope) map[string]*storagev1.VolumeAttachment {
	here := map[string]*storagev1.VolumeAttachment{}
	for _, va := range f.Attachments {
		src := va.Spec.Source
		ours := src.PersistentVolumeName != nil || (src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil)
		if ours && va.Spec.NodeName == f.Node.Name && scope.holds(f, va) {
			here[va.Name] = va
		}
	}
	return here
}

// wanted returns the desired volume an attachment serves, if any: the one
// whose attachment on this node has its name (whichever PV it names).
func (r *reconcile) wanted(va *storagev1.VolumeAttachment) *Desired {
	d := r.byName[va.Name]
	if d == nil || !d.AttachRequired {
		return nil
	}
	return d
}

// detach decides on an attachment no pod wants.
func (r *reconcile) detach(va *storagev1.VolumeAttachment) {
	unique, named := r.uniqueName(va)
	if va.DeletionTimestamp != nil {
		r.p.Wait = append(r.p.Wait, Wait{Volume: SourceName(va), Reason: DetachInProgress, Detail: "attachment " + va.Name + " is being deleted"})
		return
	}
	reason, ok := r.release(va.Name, SourceName(va), unique, named)
	if !ok {
		r.report(va, unique, named)
		return
	}
	r.p.Detach = append(r.p.Detach, Detach{Attachment: va, Volume: unique, Reason: reason})
}

// detachInTree decides on an in-tree volume (KindInTree) the node reports
// attached and no pod wants: its detach does nothing but leave
// volumesAttached, under the same rules as an attachment's; its timer is
// kept under its unique name.
func (r *reconcile) detachInTree(unique v1.UniqueVolumeName) {
	reason, ok := r.release(string(unique), string(unique), unique, true)
	if !ok {
		r.p.VolumesAttached = append(r.p.VolumesAttached, v1.AttachedVolume{Name: unique})
		r.count(unique, func(c *Count) { c.Attached = InTreePlugin(unique) })
		return
	}
	r.p.Detach = append(r.p.Detach, Detach{Volume: unique, Reason: reason})
}

// release applies the detach rules to an attached volume no pod wants,
// known by key to the unmount timers: false (and a StillMounted wait) while
// it must stay, else the reason it may go.
func (r *reconcile) release(key, volume string, unique v1.UniqueVolumeName, named bool) (DetachReason, bool) {
	f := r.f
	since, ok := f.UndesiredSince[key]
	if !ok {
		since = f.Now
	}
	r.p.UndesiredSince[key] = since
	elapsed := f.Now.Sub(since)
	expired := elapsed > f.MaxWaitForUnmount
	force := !f.Node.Ready && expired
	if named && r.inUse[unique] && !force && !f.Node.OutOfService {
		r.p.Wait = append(r.p.Wait, Wait{Volume: volume, Reason: StillMounted,
			Detail: "the node reports " + string(unique) + " in use"})
		if !expired {
			r.requeue(f.MaxWaitForUnmount-elapsed+time.Second, unique)
		}
		return 0, false
	}
	switch {
	case expired:
		return Timeout, true
	case f.Node.OutOfService:
		return OutOfService, true
	}
	return NotInUse, true
}

// attach decides on a volume the node's pods want.
func (r *reconcile) attach(d *Desired, here map[string]*storagev1.VolumeAttachment) {
	if !d.AttachRequired {
		return
	}
	r.count(d.Unique, func(c *Count) { c.Desired, c.InUse = d.pluginName(), len(d.Pods) })
	if d.Kind == KindInTree {
		r.attachInTree(d)
		return
	}
	name := Name(d.Handle, d.Driver, r.f.Node.Name)
	if va := here[name]; va != nil {
		r.existing(d, va)
		return
	}
	if !r.f.Node.Exists {
		r.p.Wait = append(r.p.Wait, Wait{Volume: d.Name, Reason: NodeGone, Detail: "node " + r.f.Node.Name + " is deleted"})
		return
	}
	single := r.singleNode(d)
	if others := r.elsewhere[d.Unique]; len(others) > 0 && single {
		r.p.Wait = append(r.p.Wait, Wait{Volume: d.Name, Reason: MultiAttach,
			Detail: "attached to " + strings.Join(others, ", ")})
		r.p.Events = append(r.p.Events, multiAttachEvents(d, r.holders(d, others))...)
		return
	}
	r.p.Create = append(r.p.Create, Attach{Attachment: NewAttachment(d, r.f.Node.Name), Volume: d.Unique, SingleNode: single})
}

// existing decides on the attachment of a wanted volume.
func (r *reconcile) existing(d *Desired, va *storagev1.VolumeAttachment) {
	switch {
	case va.DeletionTimestamp != nil:
		r.p.Wait = append(r.p.Wait, Wait{Volume: d.Name, Reason: DetachInProgress,
			Detail: "attachment " + va.Name + " is being deleted; it is made again once gone"})
	case va.Status.Attached:
		r.report(va, d.Unique, true)
		if !r.reported[d.Unique] {
			r.p.Events = append(r.p.Events, attachedEvents(d, va.Name)...)
		}
	case va.Status.AttachError != nil:
		e := va.Status.AttachError
		r.p.Wait = append(r.p.Wait, Wait{Volume: d.Name, Reason: AttachFailed, Detail: e.Message})
		r.p.Events = append(r.p.Events, attachFailedEvents(d, va.Name, e.Message, e.Time.UTC().Format(time.RFC3339Nano))...)
	default:
		r.p.Wait = append(r.p.Wait, Wait{Volume: d.Name, Reason: Attaching, Detail: "waiting for the attacher of " + d.Driver})
	}
}

// report lists an attached volume in the node's volumesAttached.
func (r *reconcile) report(va *storagev1.VolumeAttachment, unique v1.UniqueVolumeName, named bool) {
	if !named || !va.Status.Attached {
		return
	}
	r.p.VolumesAttached = append(r.p.VolumesAttached, v1.AttachedVolume{Name: unique})
	r.count(unique, func(c *Count) { c.Attached = pluginLabel(va.Spec.Attacher) })
}

// count updates the volume's count.
func (r *reconcile) count(u v1.UniqueVolumeName, update func(*Count)) {
	c := r.p.Counts[u]
	update(&c)
	r.p.Counts[u] = c
}

// requeue asks for the volumes to be decided again after d at the latest.
func (r *reconcile) requeue(d time.Duration, volumes ...v1.UniqueVolumeName) {
	if r.p.RequeueAfter == 0 || d < r.p.RequeueAfter {
		r.p.RequeueAfter = d
	}
	r.p.Requeue = append(r.p.Requeue, volumes...)
}

// attachInTree attaches an in-tree volume whose attach does nothing
// (KindInTree), as the reference's reconciler does with it: at once,
// reported in volumesAttached with SuccessfulAttachVolume, unless the node
// is gone or the Multi-Attach rule stops it.
func (r *reconcile) attachInTree(d *Desired) {
	if !r.f.Node.Exists {
		r.p.Wait = append(r.p.Wait, Wait{Volume: d.Name, Reason: NodeGone, Detail: "node " + r.f.Node.Name + " is deleted"})
		return
	}
	if others := r.elsewhere[d.Unique]; len(others) > 0 && r.singleNode(d) && !r.reported[d.Unique] {
		r.p.Wait = append(r.p.Wait, Wait{Volume: d.Name, Reason: MultiAttach,
			Detail: "attached to " + strings.Join(others, ", ")})
		r.p.Events = append(r.p.Events, multiAttachEvents(d, r.holders(d, others))...)
		return
	}
	r.p.VolumesAttached = append(r.p.VolumesAttached, v1.AttachedVolume{Name: d.Unique})
	r.count(d.Unique, func(c *Count) { c.Attached = d.Plugin })
	if !r.reported[d.Unique] {
		r.p.Events = append(r.p.Events, attachedEvents(d, string(d.Unique))...)
	}
}

// NewAttachment is the VolumeAttachment the reference's CSI attacher
// creates: its name, the driver as attacher, the node, the volume (the PV
// by name, or a migrated inline volume's translated spec); no labels,
// annotations or finalizers.
func NewAttachment(d *Desired, node string) *storagev1.VolumeAttachment {
	src := storagev1.VolumeAttachmentSource{}
	if d.Inline {
		src.InlineVolumeSpec = d.PV.Spec.DeepCopy()
	} else {
		pv := d.PV.Name
		src.PersistentVolumeName = &pv
	}
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: Name(d.Handle, d.Driver, node)},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: d.Driver, NodeName: node, Source: src},
	}
}
