package mounting

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Layout is the kubelet's directory layout under one node root (the
// kubelet's --root-dir, /var/lib/kubelet on a real node).
type Layout struct{ Root string }

// csiPluginDir is the CSI plugin's directory under plugins/, and its
// escaped form under a pod's volumes/.
const (
	csiPluginDir    = "kubernetes.io/csi"
	csiPodPluginDir = "kubernetes.io~csi"
	// VolDataFile is the file the kubelet keeps next to every staging and
	// publication, recording what the mount is of.
	VolDataFile = "vol_data.json"
	stagingLeaf = "globalmount"
	targetLeaf  = "mount"
)

// NodeRoot is the root of a simulated node under a data dir.
func NodeRoot(dataDir, node string) string { return filepath.Join(dataDir, "nodes", node) }

// DriversDir holds one directory per driver, each holding its volumes'
// staging directories.
func (l Layout) DriversDir() string { return filepath.Join(l.Root, "plugins", csiPluginDir) }

// StagingDir is where a volume's vol_data.json lives; the staging path is
// its globalmount.
func (l Layout) StagingDir(driver, handle string) string {
	return filepath.Join(l.DriversDir(), driver, fmt.Sprintf("%x", sha256.Sum256([]byte(handle))))
}

// StagingPath is the staging target path of a volume:
// <root>/plugins/kubernetes.io/csi/<driver>/<sha256hex(handle)>/globalmount.
func (l Layout) StagingPath(driver, handle string) string {
	return filepath.Join(l.StagingDir(driver, handle), stagingLeaf)
}

// Block volumes (volumeMode Block) have the kubelet's other layout, its
// block mapper's: under <root>/plugins/kubernetes.io/csi/volumeDevices,
// staging/<pv> is the staging path, publish/<pv>/<pod uid> the target (a
// file the driver makes), <pv>/data holds the volume's vol_data.json.
// Each pod's publication is recorded in
// <root>/pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>/: where the
// kubelet puts its symlink to the device, the agent (no device to link on
// a simulated node) keeps a directory with its record.
const (
	devicesDir  = "volumeDevices"
	blockStage  = "staging"
	blockPublic = "publish"
	blockData   = "data"
)

// DevicesDir holds the block volumes' staging, publish and data
// directories.
func (l Layout) DevicesDir() string { return filepath.Join(l.DriversDir(), devicesDir) }

// BlockStagingPath is the staging path of a block volume, by PV name.
func (l Layout) BlockStagingPath(pv string) string {
	return filepath.Join(l.DevicesDir(), blockStage, pv)
}

// BlockPublishPath is the target path of a pod's publication of a block
// volume.
func (l Layout) BlockPublishPath(pv string, uid types.UID) string {
	return filepath.Join(l.DevicesDir(), blockPublic, pv, string(uid))
}

// BlockDataDir is where a block volume's vol_data.json lives.
func (l Layout) BlockDataDir(pv string) string {
	return filepath.Join(l.DevicesDir(), pv, blockData)
}

// IsBlockLayoutDir says whether a directory under DevicesDir is the staging
// or publish directory rather than a volume's (by PV name).
func IsBlockLayoutDir(name string) bool { return name == blockStage || name == blockPublic }

// PodDevicesDir holds a pod's block publications, one directory per volume.
func (l Layout) PodDevicesDir(uid types.UID) string {
	return filepath.Join(l.PodDir(uid), devicesDir, csiPodPluginDir)
}

// StagePaths are the record directory and the staging path of a volume,
// by its layout.
func (l Layout) StagePaths(block bool, driver, handle, pv string) (recordDir, path string) {
	if block {
		return l.BlockDataDir(pv), l.BlockStagingPath(pv)
	}
	return l.StagingDir(driver, handle), l.StagingPath(driver, handle)
}

// PublishPaths are the record directory and the target path of a pod's
// publication of a volume, by its layout.
func (l Layout) PublishPaths(block bool, uid types.UID, pv string) (recordDir, target string) {
	if block {
		return filepath.Join(l.PodDevicesDir(uid), escapeQualifiedName(pv)), l.BlockPublishPath(pv, uid)
	}
	return l.TargetDir(uid, pv), l.TargetPath(uid, pv)
}

// PodsDir holds one directory per pod UID.
func (l Layout) PodsDir() string { return filepath.Join(l.Root, "pods") }

// PodDir is the directory of one pod.
func (l Layout) PodDir(uid types.UID) string { return filepath.Join(l.PodsDir(), string(uid)) }

// PodVolumesDir holds a pod's CSI publications, one directory per volume.
func (l Layout) PodVolumesDir(uid types.UID) string {
	return filepath.Join(l.PodDir(uid), "volumes", csiPodPluginDir)
}

// TargetDir is where a publication's vol_data.json lives; the target path
// is its mount.
func (l Layout) TargetDir(uid types.UID, pv string) string {
	return filepath.Join(l.PodVolumesDir(uid), escapeQualifiedName(pv))
}

// TargetPath is the target path of a pod's publication of a volume:
// <root>/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount.
func (l Layout) TargetPath(uid types.UID, pv string) string {
	return filepath.Join(l.TargetDir(uid, pv), targetLeaf)
}

// escapeQualifiedName is the kubelet's escaping of a name into one path
// element.
func escapeQualifiedName(s string) string { return strings.ReplaceAll(s, "/", "~") }

// VolData is the content of a vol_data.json, with the kubelet's keys; Done
// is ours: it records that the stage or publish call succeeded, so that a
// restarted agent neither repeats it nor trusts a half-done one (the
// kubelet keeps that in memory and finds mounts again from the mount
// table, which a driver that stages nothing leaves empty).
type VolData struct {
	PV           string `json:"specVolID,omitempty"`
	Handle       string `json:"volumeHandle"`
	Driver       string `json:"driverName"`
	Node         string `json:"nodeName,omitempty"`
	AttachmentID string `json:"attachmentID,omitempty"`
	Mode         string `json:"volumeLifecycleMode,omitempty"`
	Done         bool   `json:"volplaneDone,omitempty"`
	// Size and RefusedInUse, on a staging record, are Staged's, as
	// quantities.
	Size         string `json:"volplaneSize,omitempty"`
	RefusedInUse string `json:"volplaneRefusedInUse,omitempty"`
}

// Staged is the staging a record says (found in the block layout: block);
// a size that does not parse is unknown.
func (d VolData) Staged(block bool) Staged {
	s := Staged{Driver: d.Driver, Handle: d.Handle, PV: d.PV, Done: d.Done, Block: block}
	if q, err := resource.ParseQuantity(d.Size); err == nil {
		s.Size = q
	}
	if q, err := resource.ParseQuantity(d.RefusedInUse); err == nil {
		s.RefusedInUse = q
	}
	return s
}

// Published is the publication to the pod a record says (found in the
// block layout: block).
func (d VolData) Published(pod types.UID, block bool) Published {
	return Published{PodUID: pod, Driver: d.Driver, Handle: d.Handle, PV: d.PV, Done: d.Done, Block: block,
		Inline: d.Mode == string(storagev1.VolumeLifecycleEphemeral)}
}
