package provisioning

import (
	"maps"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/attachment"
)

// BuildVolume is the PV for a backend volume made for claim: pre-bound to
// the claim's UID, so the binder completes the bind and nobody else can.
// provisioned-by names the class's provisioner, as the external-provisioner
// does: the driver itself, or the in-tree plugin of a migrated class.
func BuildVolume(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string, vol *csipb.Volume) *v1.PersistentVolume {
	size := claim.Spec.Resources.Requests[v1.ResourceStorage]
	if vol.GetCapacityBytes() > 0 {
		size = *resource.NewQuantity(vol.GetCapacityBytes(), resource.BinarySI)
	}
	policy := v1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		policy = *class.ReclaimPolicy
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        VolumeName(claim),
			Annotations: map[string]string{volumehelpers.AnnDynamicallyProvisioned: class.Provisioner},
		},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: size},
			AccessModes: claim.Spec.AccessModes,
			VolumeMode:  claim.Spec.VolumeMode,
			ClaimRef: &v1.ObjectReference{Kind: persistentVolumeClaimKind, APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
			StorageClassName:              class.Name,
			PersistentVolumeReclaimPolicy: policy,
			MountOptions:                  class.MountOptions,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: vol.GetVolumeId(),
				FSType: fsType(claim, class), VolumeAttributes: vol.GetVolumeContext(),
			}},
			NodeAffinity: nodeAffinity(vol.GetAccessibleTopology()),
		},
	}
	if policy == v1.PersistentVolumeReclaimDelete {
		pv.Finalizers = []string{VolumeFinalizer}
	}
	return pv
}

// WithAttacherFinalizer is pv with the attacher's finalizer when its
// driver attaches volumes (publish): the finalizer the attacher puts on
// the PV before the first attach, put there at creation instead.
// Translated in-tree PVs are left as they are.
func WithAttacherFinalizer(pv *v1.PersistentVolume, publish bool) *v1.PersistentVolume {
	if !publish || pv.Spec.CSI == nil {
		return pv
	}
	pv.Finalizers = append(pv.Finalizers, attachment.Finalizer(pv.Spec.CSI.Driver))
	return pv
}

// nodeAffinity requires one of the topologies (terms are ORed, the keys of
// one topology ANDed); nil when the driver reported none.
func nodeAffinity(tops []*csipb.Topology) *v1.VolumeNodeAffinity {
	var terms []v1.NodeSelectorTerm
	for _, t := range tops {
		var term v1.NodeSelectorTerm
		for _, k := range slices.Sorted(maps.Keys(t.GetSegments())) {
			term.MatchExpressions = append(term.MatchExpressions, v1.NodeSelectorRequirement{
				Key: k, Operator: v1.NodeSelectorOpIn, Values: []string{t.GetSegments()[k]}})
		}
		if len(term.MatchExpressions) > 0 {
			terms = append(terms, term)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: terms}}
}

// AccessibleFrom says whether a segment (an endpoint's topology, taken as
// node labels) satisfies the PV's node affinity; a PV without one is
// accessible from everywhere.
func AccessibleFrom(pv *v1.PersistentVolume) func(map[string]string) bool {
	return func(seg map[string]string) bool {
		return volumehelpers.CheckNodeAffinity(pv, seg) == nil
	}
}

// fsType is the class's csi.storage.k8s.io/fstype for a filesystem volume;
// a raw block volume has no filesystem, so none is recorded.
func fsType(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass) string {
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return ""
	}
	return class.Parameters[paramFSType]
}
