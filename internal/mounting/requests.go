package mounting

import (
	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The CSI node requests the agent sends, built as the kubelet builds them
// (pkg/volume/csi). Secrets are left out: the agent reads them right before
// each call, as the kubelet does, and a secret that cannot be read fails
// the call.

// StageRequest is the NodeStageVolume request of v on the node.
func (l Layout) StageRequest(w World, v *Volume) *csipb.NodeStageVolumeRequest {
	return &csipb.NodeStageVolumeRequest{VolumeId: v.Handle, PublishContext: w.publishContext(v),
		StagingTargetPath: l.StagingPath(v.Driver, v.Handle),
		VolumeCapability:  Capability(v.PV), VolumeContext: v.PV.Spec.CSI.VolumeAttributes}
}

// PublishRequest is the NodePublishVolume request of v for the pod; the
// staging path is given when the driver stages.
func (l Layout) PublishRequest(w World, pod types.UID, v *Volume) *csipb.NodePublishVolumeRequest {
	req := &csipb.NodePublishVolumeRequest{VolumeId: v.Handle, PublishContext: w.publishContext(v),
		TargetPath: l.TargetPath(pod, v.PV.Name), VolumeCapability: Capability(v.PV),
		Readonly: v.ReadOnly, VolumeContext: v.PV.Spec.CSI.VolumeAttributes}
	if w.Drivers[v.Driver].Stage {
		req.StagingTargetPath = l.StagingPath(v.Driver, v.Handle)
	}
	return req
}

// ExpandRequest is the NodeExpandVolume request growing v to bytes: the
// volume path is the pod's publication, the staging path is given when the
// driver stages.
func (l Layout) ExpandRequest(w World, pod types.UID, v *Volume, bytes int64) *csipb.NodeExpandVolumeRequest {
	req := &csipb.NodeExpandVolumeRequest{VolumeId: v.Handle, VolumePath: l.TargetPath(pod, v.PV.Name),
		CapacityRange: &csipb.CapacityRange{RequiredBytes: bytes}, VolumeCapability: Capability(v.PV)}
	if w.Drivers[v.Driver].Stage {
		req.StagingTargetPath = l.StagingPath(v.Driver, v.Handle)
	}
	return req
}

// StagingRecord is the vol_data.json of v's staging on the node, not done
// yet: its size is the claim's capacity, the size the node starts from (the
// kubelet keeps it in its actual state).
func StagingRecord(node string, v *Volume) VolData {
	data := VolData{PV: v.PV.Name, Handle: v.Handle, Driver: v.Driver, Node: node, AttachmentID: v.Attachment}
	if size, ok := v.Claim.Status.Capacity[corev1.ResourceStorage]; ok {
		data.Size = size.String()
	}
	return data
}

// PublicationRecord is the vol_data.json of a pod's publication of v on the
// node, not done yet.
func PublicationRecord(node string, v *Volume) VolData {
	return VolData{PV: v.PV.Name, Handle: v.Handle, Driver: v.Driver, Node: node, AttachmentID: v.Attachment, Mode: "Persistent"}
}

// publishContext is the attachment's metadata (the attacher's publish
// context) for an attachable volume.
func (w World) publishContext(v *Volume) map[string]string {
	if va := w.Attachments[v.Attachment]; v.Attachable && va != nil {
		return va.Status.AttachmentMetadata
	}
	return nil
}

// Capability is the kubelet's volume capability for a PV: block or mount
// (fsType, mount options), and the access mode of its first access mode.
func Capability(pv *corev1.PersistentVolume) *csipb.VolumeCapability {
	c := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: accessMode(pv)}}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		c.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
		return c
	}
	c.AccessType = &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{
		FsType: pv.Spec.CSI.FSType, MountFlags: pv.Spec.MountOptions}}
	return c
}

func accessMode(pv *corev1.PersistentVolume) csipb.VolumeCapability_AccessMode_Mode {
	mode := corev1.ReadWriteOnce
	if len(pv.Spec.AccessModes) > 0 {
		mode = pv.Spec.AccessModes[0]
	}
	switch mode {
	case corev1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case corev1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case corev1.ReadWriteOncePod:
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
	}
	return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
}
