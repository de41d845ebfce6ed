package mounting

import (
	"maps"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/attachment"
)

// The CSI node requests the agent sends, built as the kubelet builds them
// (pkg/volume/csi). Secrets are left out: the agent reads them right before
// each call, as the kubelet does, and a secret that cannot be read fails
// the call. So are the service account tokens a CSIDriver asks for
// (TokenRequests): the agent requests them and adds them (TokenAttributes).

// StageRequest is the NodeStageVolume request of v on the node, staged for
// pod (whose fsGroup goes to a driver with VOLUME_MOUNT_GROUP).
func (l Layout) StageRequest(w World, pod *corev1.Pod, v *Volume) *csipb.NodeStageVolumeRequest {
	drv := w.Drivers[v.Driver]
	_, staging := l.StagePaths(v.Block, v.Driver, v.Handle, v.PV.Name)
	return &csipb.NodeStageVolumeRequest{VolumeId: v.Handle, PublishContext: w.publishContext(v),
		StagingTargetPath: staging,
		VolumeCapability:  withMountGroup(Capability(v.PV, drv.SingleNodeMultiWriter), drv, pod),
		VolumeContext:     v.PV.Spec.CSI.VolumeAttributes}
}

// PublishRequest is the NodePublishVolume request of v for the pod; the
// staging path is given when the driver stages (always for a block
// volume, as the kubelet's block mapper), and the volume context
// carries the pod's identity when the CSIDriver asks for it
// (podInfoOnMount).
func (l Layout) PublishRequest(w World, pod *corev1.Pod, v *Volume) *csipb.NodePublishVolumeRequest {
	if v.Inline != nil {
		return l.inlinePublishRequest(w, pod, v)
	}
	drv := w.Drivers[v.Driver]
	_, target := l.PublishPaths(v.Block, pod.UID, v.PV.Name)
	req := &csipb.NodePublishVolumeRequest{VolumeId: v.Handle, PublishContext: w.publishContext(v),
		TargetPath:       target,
		VolumeCapability: withMountGroup(Capability(v.PV, drv.SingleNodeMultiWriter), drv, pod),
		Readonly:         v.ReadOnly, VolumeContext: v.PV.Spec.CSI.VolumeAttributes}
	if drv.Stage || v.Block {
		// The block mapper gives its staging path whether the driver
		// stages or not.
		_, req.StagingTargetPath = l.StagePaths(v.Block, v.Driver, v.Handle, v.PV.Name)
	}
	if d := w.CSIDrivers[v.Driver]; d != nil && d.Spec.PodInfoOnMount != nil && *d.Spec.PodInfoOnMount {
		req.VolumeContext = merged(req.VolumeContext, PodInfo(pod))
	}
	return req
}

// The volume context keys of podInfoOnMount and of service account tokens.
const (
	PodNameKey            = "csi.storage.k8s.io/pod.name"
	PodNamespaceKey       = "csi.storage.k8s.io/pod.namespace"
	PodUIDKey             = "csi.storage.k8s.io/pod.uid"
	ServiceAccountNameKey = "csi.storage.k8s.io/serviceAccount.name"
	EphemeralKey          = "csi.storage.k8s.io/ephemeral"
	TokensKey             = "csi.storage.k8s.io/serviceAccount.tokens"
)

// PodInfo is what the kubelet adds to a persistent volume's context for a
// CSIDriver with podInfoOnMount.
func PodInfo(pod *corev1.Pod) map[string]string {
	return map[string]string{PodNameKey: pod.Name, PodNamespaceKey: pod.Namespace, PodUIDKey: string(pod.UID),
		ServiceAccountNameKey: pod.Spec.ServiceAccountName, EphemeralKey: strconv.FormatBool(false)}
}

// merged is a copy of a with b's entries added: the PV's attributes are
// the informer's and never modified.
func merged(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// withMountGroup gives the pod's fsGroup to a driver with
// VOLUME_MOUNT_GROUP, as the kubelet does, on a mount capability.
func withMountGroup(c *csipb.VolumeCapability, drv Driver, pod *corev1.Pod) *csipb.VolumeCapability {
	sc := pod.Spec.SecurityContext
	if m := c.GetMount(); m != nil && drv.MountGroup && sc != nil && sc.FSGroup != nil {
		m.VolumeMountGroup = strconv.FormatInt(*sc.FSGroup, 10)
	}
	return c
}

// ExpandRequest is the NodeExpandVolume request growing v to bytes: the
// volume path is the pod's publication, and the staging path is always
// given, as the kubelet gives it.
func (l Layout) ExpandRequest(w World, pod *corev1.Pod, v *Volume, bytes int64) *csipb.NodeExpandVolumeRequest {
	drv := w.Drivers[v.Driver]
	_, target := l.PublishPaths(v.Block, pod.UID, v.PV.Name)
	req := &csipb.NodeExpandVolumeRequest{VolumeId: v.Handle, VolumePath: target,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: bytes}, VolumeCapability: Capability(v.PV, drv.SingleNodeMultiWriter)}
	// The kubelet gives the staging path whether the driver stages or not
	// (its CSI plugin is always a device mounter).
	_, req.StagingTargetPath = l.StagePaths(v.Block, v.Driver, v.Handle, v.PV.Name)
	return req
}

// StagingRecord is the vol_data.json of v's staging on the node, not done
// yet: its size is the claim's capacity, the size the node starts from (the
// kubelet keeps it in its actual state). A filesystem staging's holds the
// kubelet's two keys, driverName and volumeHandle (the agent finds the PV's
// name again from the publications and the PVs), a block volume's data
// directory the kubelet's five; both add the agent's own (volplane*): what
// the kubelet keeps in memory, which a restarted agent must find again.
func StagingRecord(node string, v *Volume) VolData {
	data := VolData{Handle: v.Handle, Driver: v.Driver}
	if v.Block {
		data.PV, data.Node, data.AttachmentID = v.PV.Name, node, v.Attachment
	}
	if size, ok := v.Claim.Status.Capacity[corev1.ResourceStorage]; ok {
		data.Size = size.String()
	}
	return data
}

// PublicationRecord is the vol_data.json of a pod's publication of v on the
// node, not done yet (an inline volume's is named by the pod's volume
// name, with the lifecycle mode Ephemeral). Its attachmentID is the VolumeAttachment name the
// volume has or would have on the node, attachable or not, as the
// kubelet's.
func PublicationRecord(node string, v *Volume) VolData {
	if v.Inline != nil {
		return VolData{PV: v.Name, Handle: v.Handle, Driver: v.Driver, Node: node,
			AttachmentID: attachment.Name(v.Handle, v.Driver, node), Mode: string(storagev1.VolumeLifecycleEphemeral)}
	}
	return VolData{PV: v.PV.Name, Handle: v.Handle, Driver: v.Driver, Node: node,
		AttachmentID: attachment.Name(v.Handle, v.Driver, node), Mode: string(storagev1.VolumeLifecyclePersistent)}
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
// (fsType, mount options), and the access mode of its first access mode,
// mapped as the kubelet maps it for a node service with or without
// SINGLE_NODE_MULTI_WRITER.
func Capability(pv *corev1.PersistentVolume, singleNodeMultiWriter bool) *csipb.VolumeCapability {
	c := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: accessMode(pv, singleNodeMultiWriter)}}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		c.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
		return c
	}
	c.AccessType = &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{
		FsType: pv.Spec.CSI.FSType, MountFlags: pv.Spec.MountOptions}}
	return c
}

// accessMode is the kubelet's: the PV's first access mode (ReadWriteOnce
// when it has none); a node service without SINGLE_NODE_MULTI_WRITER gets
// SINGLE_NODE_WRITER for both single-node modes, one with it gets
// SINGLE_NODE_MULTI_WRITER for ReadWriteOnce and SINGLE_NODE_SINGLE_WRITER
// for ReadWriteOncePod.
func accessMode(pv *corev1.PersistentVolume, singleNodeMultiWriter bool) csipb.VolumeCapability_AccessMode_Mode {
	mode := corev1.ReadWriteOnce
	if len(pv.Spec.AccessModes) > 0 {
		mode = pv.Spec.AccessModes[0]
	}
	switch mode {
	case corev1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case corev1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case corev1.ReadWriteOnce:
		if singleNodeMultiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case corev1.ReadWriteOncePod:
		if singleNodeMultiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
	return csipb.VolumeCapability_AccessMode_UNKNOWN
}
