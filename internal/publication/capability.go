package publication

import (
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
)

// Capability is the one volume capability ControllerPublishVolume is sent:
// block or mount (spec.csi.fsType, the PV's mount options) by volumeMode,
// and the access mode the PV's access modes amount to (see accessMode).
func Capability(spec *v1.PersistentVolumeSpec, singleNodeMultiWriter bool) (*csipb.VolumeCapability, error) {
	mode, err := accessMode(spec.AccessModes, singleNodeMultiWriter)
	if err != nil {
		return nil, err
	}
	c := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode}}
	if spec.VolumeMode != nil && *spec.VolumeMode == v1.PersistentVolumeBlock {
		c.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
		return c, nil
	}
	var fsType string
	if spec.CSI != nil {
		fsType = spec.CSI.FSType
	}
	c.AccessType = &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{
		FsType: fsType, MountFlags: spec.MountOptions}}
	return c, nil
}

// accessMode folds a PV's access modes into one CSI mode as the sidecars'
// csi-lib-utils does: ReadWriteOncePod only alone; otherwise the widest of
// ReadWriteMany, ReadOnlyMany, ReadWriteOnce, where ReadOnlyMany and
// ReadWriteOnce together have no CSI equivalent. A driver with
// SINGLE_NODE_MULTI_WRITER gets the finer single-node modes.
func accessMode(modes []v1.PersistentVolumeAccessMode, singleNodeMultiWriter bool) (csipb.VolumeCapability_AccessMode_Mode, error) {
	has := map[v1.PersistentVolumeAccessMode]bool{}
	for _, m := range modes {
		has[m] = true
	}
	switch {
	case has[v1.ReadWriteOncePod] && len(has) > 1:
		return 0, fmt.Errorf("Kubernetes does not support use of ReadWriteOncePod with other access modes on the same PersistentVolume")
	case has[v1.ReadWriteOncePod] && singleNodeMultiWriter:
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, nil
	case has[v1.ReadWriteOncePod]:
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, nil
	case has[v1.ReadWriteMany]:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, nil
	case has[v1.ReadOnlyMany] && has[v1.ReadWriteOnce]:
		return 0, fmt.Errorf("CSI does not support ReadOnlyMany and ReadWriteOnce on the same PersistentVolume")
	case has[v1.ReadOnlyMany]:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, nil
	case has[v1.ReadWriteOnce] && singleNodeMultiWriter:
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER, nil
	case has[v1.ReadWriteOnce]:
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, nil
	}
	return 0, fmt.Errorf("unsupported AccessMode combination: %+v", modes)
}
