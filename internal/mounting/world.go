package mounting

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// World is what one node's decision rests on. Nothing in it is modified.
type World struct {
	Node string
	// Registered: the Node object exists. Without it nothing is reported
	// and no deletion is finished.
	Registered bool
	// NodeLabels are the Node's labels, which a PV's node affinity must
	// match before the volume is mounted.
	NodeLabels map[string]string
	// Attached is node.status.volumesAttached, by unique volume name.
	Attached map[corev1.UniqueVolumeName]bool
	// Reported is node.status.volumesInUse as last written.
	Reported []corev1.UniqueVolumeName
	// Pods are the pods bound to the node, including those being deleted.
	Pods []*corev1.Pod
	// Claims by "namespace/name", Volumes by name.
	Claims  map[string]*corev1.PersistentVolumeClaim
	Volumes map[string]*corev1.PersistentVolume
	// CSIDrivers by name; a driver without one needs attaching, as in the
	// reference.
	CSIDrivers map[string]*storagev1.CSIDriver
	// Drivers are the drivers whose node service serves this node.
	Drivers map[string]Driver
	// Attachments are VolumeAttachments by name.
	Attachments map[string]*storagev1.VolumeAttachment
	// Found on disk.
	Staged    []Staged
	Published []Published
	// PodDirs are the pod directories on disk.
	PodDirs []types.UID
}

// Driver is a driver's node service on this node.
type Driver struct {
	// Stage: the node service has STAGE_UNSTAGE_VOLUME; Expand: it has
	// EXPAND_VOLUME.
	Stage, Expand bool
	// SingleNodeMultiWriter: SINGLE_NODE_MULTI_WRITER, which changes the
	// access modes of the node calls; MountGroup: VOLUME_MOUNT_GROUP, so the
	// pod's fsGroup is given to the driver.
	SingleNodeMultiWriter, MountGroup bool
	// Stats: GET_VOLUME_STATS.
	Stats bool
	// VolumeHealth: GET_VOLUME_HEALTH (NodeGetVolumeHealth);
	// StorageHealth: GET_STORAGE_HEALTH (NodeGetStorageHealth).
	VolumeHealth, StorageHealth bool
}

// Staged is a volume's staging found on disk.
type Staged struct {
	Driver, Handle, PV string
	// Done: the stage call succeeded.
	Done bool
	// Size is the size the node last saw the volume at: the claim's
	// capacity when it was staged, then each size it was expanded to on
	// the node (the kubelet keeps it in its actual state); zero if unknown.
	Size resource.Quantity
	// RefusedInUse is a size the driver refused to expand the volume to
	// while in use (FailedPrecondition); zero if none. The node does not
	// try that size online again while the volume stays staged.
	RefusedInUse resource.Quantity
	// Block: found in the block layout (a volumeMode Block volume).
	Block bool
}

// Published is a pod's publication found on disk.
type Published struct {
	PodUID             types.UID
	Driver, Handle, PV string
	Done               bool
	// Block: found in the block layout (a volumeMode Block volume).
	Block bool
	// Inline: an inline ephemeral volume's (its record's lifecycle mode is
	// Ephemeral); PV is then the pod's volume name. It was never attached
	// nor reported in use.
	Inline bool
}

// volumeKey names a volume on the node: its driver and handle.
type volumeKey struct{ driver, handle string }

func (s Staged) key() volumeKey    { return volumeKey{s.Driver, s.Handle} }
func (p Published) key() volumeKey { return volumeKey{p.Driver, p.Handle} }

type publicationKey struct {
	uid types.UID
	pv  string
}

func (p Published) pubKey() publicationKey { return publicationKey{p.PodUID, p.PV} }

// attachable says whether volumes of driver are attached before use: its
// CSIDriver says attachRequired, or there is no CSIDriver at all.
func (w World) attachable(driver string) bool {
	d, ok := w.CSIDrivers[driver]
	if !ok || d == nil || d.Spec.AttachRequired == nil {
		return true
	}
	return *d.Spec.AttachRequired
}
