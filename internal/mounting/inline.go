package mounting

import (
	"crypto/sha256"
	"fmt"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/attachment"
)

// Inline ephemeral volumes: a CSI volume in the pod's own spec, published
// as the kubelet 1.37 publishes it (pkg/volume/csi: csiPlugin.NewMounter,
// csiMountMgr.SetUpAt and TearDownAt):
//
//   - only to a driver whose CSIDriver lists the Ephemeral lifecycle mode
//     (no CSIDriver: refused), with the kubelet's SetUp text otherwise;
//   - the volume handle is "csi-" and the hex sha256 of the pod's UID
//     followed by the volume's name: no field of the pod names a volume
//     ID, so a pod cannot reach a volume that is not its own;
//   - no stage, no attach, no expansion, no volumesInUse: NodePublishVolume
//     alone, at the pod's target path named by the volume's name, with no
//     staging path and no publish context;
//   - the capability is a mount of the source's fsType (no mount options)
//     with the kubelet's ReadWriteOnce access mode, mapped as for a PV;
//     readOnly is the source's;
//   - the volume context is the source's attributes (the pod author's),
//     then, for a CSIDriver with podInfoOnMount, the pod's identity with
//     csi.storage.k8s.io/ephemeral "true" (the kubelet's keys override the
//     author's), then the service account tokens a CSIDriver asks for;
//   - nodePublishSecretRef names a secret of the pod's own namespace: the
//     source has a name only (InlineSecretRef);
//   - the record is vol_data.json with volumeLifecycleMode Ephemeral, and
//     teardown is NodeUnpublishVolume alone.

// InlineHandle is the kubelet's volume handle of a pod's inline volume.
func InlineHandle(pod *corev1.Pod, volume string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(string(pod.UID)+volume)))
}

// inline decides a CSI volume of the pod's own spec: refused for a driver
// that does not take Ephemeral volumes, waiting for a driver not served
// here, published already, or to publish.
func (w World) inline(pod *corev1.Pod, vol *corev1.Volume, d *disk) Step {
	src := vol.CSI
	step := Step{Name: vol.Name, Action: Wait}
	if why := w.ephemeralRefusal(src.Driver); why != "" {
		step.Reason = EphemeralNotSupported
		step.Err = fmt.Sprintf("MountVolume.SetUp failed for volume %q : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: %s", vol.Name, why)
		return step
	}
	v := &Volume{Inline: src, Name: vol.Name, Driver: src.Driver, Handle: InlineHandle(pod, vol.Name),
		ReadOnly: src.ReadOnly != nil && *src.ReadOnly, Unique: attachment.UniqueVolumeName(src.Driver, InlineHandle(pod, vol.Name))}
	step.Volume = v
	if p, ok := d.published[publicationKey{pod.UID, vol.Name}]; ok && p.Done {
		step.Action = Done
		return step
	}
	if _, ok := w.Drivers[src.Driver]; !ok {
		step.Reason = DriverNotServed
		step.Err = fmt.Sprintf("kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name %s not found in the list of registered CSI drivers", src.Driver)
		return step
	}
	step.Action = Publish
	return step
}

// ephemeralRefusal is the kubelet's lifecycle check of an inline volume's
// driver: why it is refused, or "".
func (w World) ephemeralRefusal(driver string) string {
	mode := storagev1.VolumeLifecycleEphemeral
	switch d := w.CSIDrivers[driver]; {
	case d == nil:
		return fmt.Sprintf("volume mode %q not supported by driver %s (no CSIDriver object)", mode, driver)
	case !slices.Contains(d.Spec.VolumeLifecycleModes, mode):
		return fmt.Sprintf("volume mode %q not supported by driver %s (only supports %q)", mode, driver, d.Spec.VolumeLifecycleModes)
	}
	return ""
}

// inlinePublishRequest is the kubelet's NodePublishVolume of an inline
// volume.
func (l Layout) inlinePublishRequest(w World, pod *corev1.Pod, v *Volume) *csipb.NodePublishVolumeRequest {
	drv := w.Drivers[v.Driver]
	c := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: accessMode(&corev1.PersistentVolume{}, drv.SingleNodeMultiWriter)}}
	mount := &csipb.VolumeCapability_MountVolume{}
	if v.Inline.FSType != nil {
		mount.FsType = *v.Inline.FSType
	}
	c.AccessType = &csipb.VolumeCapability_Mount{Mount: mount}
	req := &csipb.NodePublishVolumeRequest{VolumeId: v.Handle, TargetPath: l.TargetPath(pod.UID, v.Name),
		VolumeCapability: withMountGroup(c, drv, pod), Readonly: v.ReadOnly, VolumeContext: v.Inline.VolumeAttributes}
	if d := w.CSIDrivers[v.Driver]; d != nil && d.Spec.PodInfoOnMount != nil && *d.Spec.PodInfoOnMount {
		info := PodInfo(pod)
		info[EphemeralKey] = "true"
		req.VolumeContext = merged(req.VolumeContext, info)
	}
	return req
}

// PublishSecretRef is the secret the publish of v reads: the PV's
// nodePublishSecretRef, or, for an inline volume, the source's name in
// the pod's own namespace (the kubelet's; the source has no namespace to
// name another); nil for none.
func (v *Volume) PublishSecretRef(pod *corev1.Pod) *corev1.SecretReference {
	if v.Inline == nil {
		return v.PV.Spec.CSI.NodePublishSecretRef
	}
	if ref := v.Inline.NodePublishSecretRef; ref != nil {
		return &corev1.SecretReference{Name: ref.Name, Namespace: pod.Namespace}
	}
	return nil
}
