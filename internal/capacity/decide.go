package capacity

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The labels every published object carries, the reference's
// DriverNameLabel and ManagedByLabel, and its generateName.
const (
	DriverNameLabel = "csi.storage.k8s.io/drivername"
	ManagedByLabel  = "csi.storage.k8s.io/managed-by"
	GenerateName    = "csisc-"
)

// managedBy is volplane's managed-by value (the reference writes
// "external-provisioner"): a different value keeps the two from fighting
// over one driver's objects.
const managedBy = "volplane"

// ManagedBy is the managed-by label of a capacity loop: "volplane", or in
// node deployment "volplane-<node>", cut to a label's 63 characters with a
// hash of the whole as the reference's getNameWithMaxLength does.
func ManagedBy(node string) string {
	if node == "" {
		return managedBy
	}
	name := managedBy + "-" + node
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:63-9] + "-" + hex.EncodeToString(sum[:])[:8]
}

// Identity says who publishes: the objects of Driver labelled ManagedBy in
// Namespace are this loop's, and carry Owner (nil: no owner) as their
// controller.
type Identity struct {
	Driver, ManagedBy, Namespace string
	Owner                        *metav1.OwnerReference
}

// Item is one wanted object: a segment and a class.
type Item struct {
	Segment Segment
	Class   string
}

// Key is the item as a string (a map key).
func (i Item) Key() string { return i.Class + "@" + i.Segment.Key() }

// Items are every class on every segment.
func Items(segments []Segment, classes []*storagev1.StorageClass) []Item {
	var out []Item
	for _, c := range classes {
		for _, s := range segments {
			out = append(out, Item{Segment: s, Class: c.Name})
		}
	}
	return out
}

// Classes are the classes of driver the reference publishes for: its
// provisioner, and not Immediate unless immediate is set
// (--capacity-for-immediate-binding).
func Classes(driver string, classes []*storagev1.StorageClass, immediate bool) []*storagev1.StorageClass {
	var out []*storagev1.StorageClass
	for _, c := range classes {
		if c.Provisioner != driver {
			continue
		}
		if !immediate && c.VolumeBindingMode != nil && *c.VolumeBindingMode == storagev1.VolumeBindingImmediate {
			continue
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *storagev1.StorageClass) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Answer is what GetCapacity said for an item: available_capacity and
// maximum_volume_size (nil: not reported).
type Answer struct {
	Available int64
	Maximum   *int64
}

// Facts are what a publishing decision is made from.
type Facts struct {
	Identity Identity
	Items    []Item
	// Answers are by Item.Key; an item without one is not created, and its
	// object (if any) is left as it is until the driver answers.
	Answers map[string]Answer
	// InFlight are the bytes being provisioned that the item's answer does
	// not count yet, by Item.Key.
	InFlight map[string]int64
	// Existing are the objects listed in the namespace; those not this
	// loop's (Identity) are never touched.
	Existing []*storagev1.CSIStorageCapacity
}

// Reason says why an object is deleted.
type Reason string

const (
	// Obsolete: no item wants it (its class or segment is gone, or the
	// class is not one capacity is published for).
	Obsolete Reason = "Obsolete"
	// Duplicate: another object already stands for its item.
	Duplicate Reason = "Duplicate"
	// ForeignOwner: it carries this loop's labels but another controller
	// owns it. The reference would add its own owner as a second
	// controller, which the API server refuses forever; it is deleted
	// instead, since what it publishes is no driver's answer.
	ForeignOwner Reason = "ForeignOwner"
)

// Deletion is an object to delete and why.
type Deletion struct {
	Object *storagev1.CSIStorageCapacity
	Reason Reason
}

// Plan makes the objects match the items: creates (generateName, no
// name), updates (copies with the new values) and deletes.
type Plan struct {
	Create []*storagev1.CSIStorageCapacity
	Update []*storagev1.CSIStorageCapacity
	Delete []Deletion
}

// Empty says whether the plan writes nothing.
func (p Plan) Empty() bool { return len(p.Create)+len(p.Update)+len(p.Delete) == 0 }

// Decide is the reference's syncCapacity over every item at once, and its
// onCAddOrUpdate's matching: each existing object of this loop is matched
// to the item of its class and nodeTopology (oldest first; later ones are
// duplicates), objects no item wants are deleted, and each answered item's
// object is created, or updated only when its capacity, maximumVolumeSize
// or owner differ from what is to be published (Published).
func Decide(f Facts) Plan {
	var p Plan
	matched := map[string]*storagev1.CSIStorageCapacity{}
	wanted := map[string]bool{}
	for _, it := range f.Items {
		wanted[it.Key()] = true
	}
	for _, obj := range ours(f.Identity, f.Existing) {
		if foreign(f.Identity, obj) {
			p.Delete = append(p.Delete, Deletion{Object: obj, Reason: ForeignOwner})
			continue
		}
		key, ok := itemKeyOf(obj)
		switch {
		case !ok || !wanted[key]:
			p.Delete = append(p.Delete, Deletion{Object: obj, Reason: Obsolete})
		case matched[key] != nil:
			p.Delete = append(p.Delete, Deletion{Object: obj, Reason: Duplicate})
		default:
			matched[key] = obj
		}
	}
	for _, it := range f.Items {
		a, ok := f.Answers[it.Key()]
		if !ok {
			continue
		}
		capBytes, maxBytes := Published(a, f.InFlight[it.Key()])
		obj := matched[it.Key()]
		switch {
		case obj == nil:
			p.Create = append(p.Create, newObject(f.Identity, it, capBytes, maxBytes))
		case !current(f.Identity, obj, capBytes, maxBytes):
			p.Update = append(p.Update, updated(f.Identity, obj, capBytes, maxBytes))
		}
	}
	return p
}

// ours are the objects of this loop, oldest first (name breaks ties).
func ours(id Identity, all []*storagev1.CSIStorageCapacity) []*storagev1.CSIStorageCapacity {
	var out []*storagev1.CSIStorageCapacity
	for _, o := range all {
		if o.Namespace == id.Namespace && o.Labels[DriverNameLabel] == id.Driver && o.Labels[ManagedByLabel] == id.ManagedBy {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *storagev1.CSIStorageCapacity) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// itemKeyOf is the Item.Key an object stands for: its class and the
// segment of its matchLabels (an empty map and nil alike, where the
// reference's DeepEqual would tell them apart after a round trip).
func itemKeyOf(obj *storagev1.CSIStorageCapacity) (string, bool) {
	seg, ok := FromSelector(obj.NodeTopology)
	if !ok {
		return "", false
	}
	return Item{Segment: seg, Class: obj.StorageClassName}.Key(), true
}

// SegmentKeyOf is the driver and segment key (Segment.Key) an object
// publishes for; ok is false when its nodeTopology is not plain
// matchLabels.
func SegmentKeyOf(obj *storagev1.CSIStorageCapacity) (driver, segment string, ok bool) {
	seg, ok := FromSelector(obj.NodeTopology)
	if !ok {
		return "", "", false
	}
	return obj.Labels[DriverNameLabel], seg.Key(), true
}

// DriverSegmentKey is one segment of one driver as a string,
// "driver/segment" (a work key, an index key); a driver's name has no "/",
// so the first one splits it again.
func DriverSegmentKey(driver, segment string) string { return driver + "/" + segment }

// ObjectKey is the DriverSegmentKey an object publishes for; ok is false
// when its nodeTopology is not plain matchLabels.
func ObjectKey(obj *storagev1.CSIStorageCapacity) (string, bool) {
	driver, seg, ok := SegmentKeyOf(obj)
	if !ok {
		return "", false
	}
	return DriverSegmentKey(driver, seg), true
}

// foreign says whether another controller than Identity.Owner owns obj
// (never, without an owner: the reference then checks no owner at all).
func foreign(id Identity, obj *storagev1.CSIStorageCapacity) bool {
	if id.Owner == nil {
		return false
	}
	c := metav1.GetControllerOfNoCopy(obj)
	return c != nil && c.UID != id.Owner.UID
}

// ownedBy is the reference's isOwnedByUs.
func ownedBy(id Identity, obj *storagev1.CSIStorageCapacity) bool {
	c := metav1.GetControllerOfNoCopy(obj)
	return c != nil && c.UID == id.Owner.UID
}

// current says whether obj already publishes these values with the right
// owner: then it is not written.
func current(id Identity, obj *storagev1.CSIStorageCapacity, capBytes int64, maxBytes *int64) bool {
	return obj.Capacity != nil && obj.Capacity.Value() == capBytes &&
		sameSize(obj.MaximumVolumeSize, maxBytes) &&
		(id.Owner == nil || ownedBy(id, obj))
}

func sameSize(q *resource.Quantity, b *int64) bool {
	if q == nil || b == nil {
		return q == nil && b == nil
	}
	return q.Value() == *b
}

func quantity(b *int64) *resource.Quantity {
	if b == nil {
		return nil
	}
	return resource.NewQuantity(*b, resource.BinarySI)
}

func newObject(id Identity, it Item, capBytes int64, maxBytes *int64) *storagev1.CSIStorageCapacity {
	obj := &storagev1.CSIStorageCapacity{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: GenerateName, Namespace: id.Namespace,
			Labels: map[string]string{DriverNameLabel: id.Driver, ManagedByLabel: id.ManagedBy},
		},
		StorageClassName:  it.Class,
		NodeTopology:      it.Segment.Selector(),
		Capacity:          resource.NewQuantity(capBytes, resource.BinarySI),
		MaximumVolumeSize: quantity(maxBytes),
	}
	if id.Owner != nil {
		obj.OwnerReferences = []metav1.OwnerReference{*id.Owner}
	}
	return obj
}

func updated(id Identity, obj *storagev1.CSIStorageCapacity, capBytes int64, maxBytes *int64) *storagev1.CSIStorageCapacity {
	upd := obj.DeepCopy()
	upd.Capacity = resource.NewQuantity(capBytes, resource.BinarySI)
	upd.MaximumVolumeSize = quantity(maxBytes)
	if id.Owner != nil && !ownedBy(id, upd) {
		upd.OwnerReferences = append(upd.OwnerReferences, *id.Owner)
	}
	return upd
}
