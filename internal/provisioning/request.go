package provisioning

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/quantity"
)

// RequestFacts is everything a CreateVolumeRequest is built from; the sync
// reads it from listers, BuildRequest decides.
type RequestFacts struct {
	Claim  *v1.PersistentVolumeClaim
	Class  *storagev1.StorageClass
	Driver Driver
	// TopologyKeys are the keys the driver's endpoints report.
	TopologyKeys []string
	// Selected is the claim's selected node, nil without one.
	Selected *v1.Node
	// Nodes are all known nodes (used without selected node and allowed
	// topologies).
	Nodes []*v1.Node
	// SourceHandle is the volume handle of the claim to clone, "" if none.
	SourceHandle string
	// Snapshot is the snapshot handle to restore, "" if none (never
	// together with SourceHandle).
	Snapshot string
	// SourceAt, with a clone or snapshot source, says whether a segment can reach the
	// source volume (its PV's node affinity): a clone is made where its
	// source lives, which node-local drivers need. nil: anywhere.
	SourceAt func(segment map[string]string) bool
}

// knownReserved are the class parameters under reservedPrefix the
// provisioner understands (the external-provisioner's list in
// removePrefixedParameters); none of them reaches the driver.
var knownReserved = []string{
	"fstype", "secret-name", "secret-namespace",
	"provisioner-secret-name", "provisioner-secret-namespace",
	"controller-publish-secret-name", "controller-publish-secret-namespace",
	"node-stage-secret-name", "node-stage-secret-namespace",
	"node-publish-secret-name", "node-publish-secret-namespace",
	"controller-expand-secret-name", "controller-expand-secret-namespace",
	"node-expand-secret-name", "node-expand-secret-namespace",
	"controller-modify-secret-name", "controller-modify-secret-namespace",
}

// VolumeName is the backend volume's and the PV's name for a claim.
func VolumeName(claim *v1.PersistentVolumeClaim) string {
	return VolumeNamePrefix + string(claim.UID)
}

// BuildRequest builds the CreateVolumeRequest; every error is final (Final).
func BuildRequest(in RequestFacts) (*csipb.CreateVolumeRequest, error) {
	params, err := DriverParameters(in.Class.Parameters)
	if err != nil {
		return nil, err
	}
	caps, err := volumeCapabilities(in.Claim, in.Class)
	if err != nil {
		return nil, err
	}
	size := in.Claim.Spec.Resources.Requests[v1.ResourceStorage]
	bytes, ok := quantity.Bytes(size)
	if !ok {
		return nil, Final(quantity.TooLarge(size))
	}
	req := &csipb.CreateVolumeRequest{
		Name:               VolumeName(in.Claim),
		CapacityRange:      &csipb.CapacityRange{RequiredBytes: bytes},
		Parameters:         params,
		VolumeCapabilities: caps,
	}
	if in.SourceHandle != "" {
		req.VolumeContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{
			Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: in.SourceHandle}}}
	}
	if in.Snapshot != "" {
		req.VolumeContentSource = SnapshotContentSource(in.Snapshot)
	}
	if in.Driver.Accessibility {
		if req.AccessibilityRequirements, err = accessibility(in); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// DriverParameters are the class parameters minus the provisioner's own; an
// unknown key in the provisioner's namespace is a mistake in the class. The
// deprecated secret keys (csiProvisionerSecretName...) are not in that
// namespace and reach the driver, as with the reference.
func DriverParameters(class map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(class)) {
		name, reserved := strings.CutPrefix(k, reservedPrefix)
		switch {
		case !reserved:
			out[k] = class[k]
		case !slices.Contains(knownReserved, name):
			return nil, Final(fmt.Errorf("failed to strip CSI Parameters of prefixed keys: found unknown parameter key \"%s\" with reserved namespace %s", k, reservedPrefix))
		}
	}
	return out, nil
}

// volumeCapabilities: one per access mode, all of the claim's volume mode.
func volumeCapabilities(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass) ([]*csipb.VolumeCapability, error) {
	if len(claim.Spec.AccessModes) == 0 {
		return nil, Final(fmt.Errorf("the claim has no access modes"))
	}
	var caps []*csipb.VolumeCapability
	for _, m := range claim.Spec.AccessModes {
		mode, ok := accessModes[m]
		if !ok {
			return nil, Final(fmt.Errorf("access mode %q is not supported", m))
		}
		c := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode}}
		if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == v1.PersistentVolumeBlock {
			c.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
		} else {
			c.AccessType = &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{
				FsType: class.Parameters[paramFSType], MountFlags: class.MountOptions}}
		}
		caps = append(caps, c)
	}
	return caps, nil
}

var accessModes = map[v1.PersistentVolumeAccessMode]csipb.VolumeCapability_AccessMode_Mode{
	v1.ReadWriteOnce:    csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
	v1.ReadOnlyMany:     csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
	v1.ReadWriteMany:    csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER,
	v1.ReadWriteOncePod: csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
}
