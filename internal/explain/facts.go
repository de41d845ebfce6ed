package explain

import (
	"slices"
	"time"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/protection"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// Facts is the snapshot a report is made from. The caller reads it from
// the API server; lists may be in any order.
type Facts struct {
	Volumes     []*v1.PersistentVolume
	Claims      []*v1.PersistentVolumeClaim
	Classes     []*storagev1.StorageClass
	Pods        []*v1.Pod
	Nodes       []*v1.Node
	Attachments []*storagev1.VolumeAttachment
	Drivers     []*storagev1.CSIDriver
	// Capacities are the CSIStorageCapacity objects of every namespace, as
	// the scheduler reads them (empty when they could not be read).
	Capacities []*storagev1.CSIStorageCapacity
	// Events are the events recorded on the object explained (and, for a
	// claim, on its volume).
	Events []*v1.Event
	// Provisioners says, per provisioner name, whether something serves it.
	// A name missing from the map was not checked.
	Provisioners map[string]Provisioner
	Now          time.Time
	// VolumeSnapshots, Contents and SnapshotClasses are the snapshot API's
	// objects (empty when it is not installed); Snapshotters says, per
	// driver, whether a snapshotter serves it (a driver missing from the
	// map was not checked).
	VolumeSnapshots []*snapv1.VolumeSnapshot
	Contents        []*snapv1.VolumeSnapshotContent
	SnapshotClasses []*snapv1.VolumeSnapshotClass
	Snapshotters    map[string]Provisioner
	// SnapshotsUnread says why the snapshot API was not read (it is not
	// installed, or the caller has no client of it); "" when it was.
	SnapshotsUnread string
	// GroupSnapshots, GroupContents and GroupClasses are the group
	// snapshot API's objects.
	GroupSnapshots []*vgsv1.VolumeGroupSnapshot
	GroupContents  []*vgsv1.VolumeGroupSnapshotContent
	GroupClasses   []*vgsv1.VolumeGroupSnapshotClass
}

// Provisioner is whether anything serves a provisioner name, as the caller
// found out (a fresh heartbeat or leader-election Lease).
type Provisioner struct {
	Serving bool `json:"serving"`
	// Note is a sentence for people: who serves it, or why nothing seems to.
	Note string `json:"note"`
	// Nodes are the nodes served, for a provisioner deployed per node;
	// empty for a central one.
	Nodes []string `json:"nodes,omitempty"`
}

// ClaimProvisioners are the provisioner names a claim's report asks about:
// the one its class names and the one it was handed to.
func ClaimProvisioners(claim *v1.PersistentVolumeClaim, classes []*storagev1.StorageClass) []string {
	var names []string
	if class := named(classes, binding.ClaimClass(claim)); class != nil {
		if p, err := binding.ExternalProvisioner(class); err == nil {
			names = append(names, p)
		}
	}
	if p := handedTo(claim); p != "" {
		names = append(names, p)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// FindClaim, FindVolume, FindClass and FindNode look an object up by name; nil when
// the snapshot has none.
func (f *Facts) FindClaim(namespace, name string) *v1.PersistentVolumeClaim {
	for _, c := range f.Claims {
		if c.Namespace == namespace && c.Name == name {
			return c
		}
	}
	return nil
}

func (f *Facts) FindVolume(name string) *v1.PersistentVolume { return named(f.Volumes, name) }

func (f *Facts) FindClass(name string) *storagev1.StorageClass { return named(f.Classes, name) }

func (f *Facts) FindNode(name string) *v1.Node { return named(f.Nodes, name) }

// FindSnapshot, FindContent and FindSnapshotClass look an object of the
// snapshot API up by name; nil when the snapshot has none.
func (f *Facts) FindSnapshot(namespace, name string) *snapv1.VolumeSnapshot {
	for _, vs := range f.VolumeSnapshots {
		if vs.Namespace == namespace && vs.Name == name {
			return vs
		}
	}
	return nil
}

func (f *Facts) FindContent(name string) *snapv1.VolumeSnapshotContent {
	return named(f.Contents, name)
}

func (f *Facts) FindSnapshotClass(name string) *snapv1.VolumeSnapshotClass {
	return named(f.SnapshotClasses, name)
}

// DefaultSnapshotClasses are the classes of driver marked default, as the
// snapshot loop picks one for a snapshot that names none.
func (f *Facts) DefaultSnapshotClasses(driver string) []*snapv1.VolumeSnapshotClass {
	var out []*snapv1.VolumeSnapshotClass
	for _, c := range f.SnapshotClasses {
		if c.Driver == driver && c.Annotations[snapshotapi.DefaultClassAnnotation] == "true" {
			out = append(out, c)
		}
	}
	return out
}

func (f *Facts) driver(name string) *storagev1.CSIDriver { return named(f.Drivers, name) }

// named is the object of that name in list, nil (the zero T) if none.
func named[T interface{ GetName() string }](list []T, name string) T {
	var none T
	if i := slices.IndexFunc(list, func(o T) bool { return o.GetName() == name }); i >= 0 {
		return list[i]
	}
	return none
}

// PodsNaming are the pods of the namespace that refer to the claim name,
// ephemeral volumes included, as the controllers' pod indexes find them.
func (f *Facts) PodsNaming(namespace, claimName string) []*v1.Pod {
	key := namespace + "/" + claimName
	var out []*v1.Pod
	for _, pod := range f.Pods {
		if pod.Namespace == namespace && slices.Contains(protection.ClaimKeys(pod), key) {
			out = append(out, pod)
		}
	}
	return out
}
