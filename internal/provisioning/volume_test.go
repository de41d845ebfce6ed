package provisioning

import (
	"slices"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

func TestBuildVolume(t *testing.T) {
	vol := &csipb.Volume{VolumeId: "h1", CapacityBytes: 2 << 20, VolumeContext: map[string]string{"k": "v"},
		AccessibleTopology: []*csipb.Topology{{Segments: map[string]string{topoKey: "a"}}, {Segments: map[string]string{topoKey: "b"}}}}
	c := claim()
	pv := BuildVolume(c, class(func(s *storagev1.StorageClass) {
		s.MountOptions = []string{"noatime"}
		s.Parameters = map[string]string{paramFSType: "xfs"}
	}), testDriver, vol)
	switch {
	case pv.Name != "pvc-uid-1" || pv.Annotations[volumehelpers.AnnDynamicallyProvisioned] != testDriver:
		t.Errorf("meta %v", pv.ObjectMeta)
	case pv.Spec.ClaimRef.UID != c.UID || pv.Spec.ClaimRef.Name != "data" || pv.Spec.ClaimRef.Namespace != "ns" || pv.Spec.ClaimRef.Kind != "PersistentVolumeClaim":
		t.Errorf("claimRef %v", pv.Spec.ClaimRef)
	case pv.Spec.Capacity.Storage().Value() != 2<<20:
		t.Errorf("capacity %v, want the driver's", pv.Spec.Capacity)
	case pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || !slices.Contains(pv.Finalizers, VolumeFinalizer):
		t.Errorf("policy %s finalizers %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Finalizers)
	case pv.Spec.CSI.VolumeHandle != "h1" || pv.Spec.CSI.FSType != "xfs" || pv.Spec.CSI.VolumeAttributes["k"] != "v":
		t.Errorf("csi %v", pv.Spec.CSI)
	case pv.Spec.StorageClassName != "fast" || pv.Spec.MountOptions[0] != "noatime":
		t.Errorf("class %s mount options %v", pv.Spec.StorageClassName, pv.Spec.MountOptions)
	case len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) != 2:
		t.Errorf("node affinity %v, want one term per topology", pv.Spec.NodeAffinity)
	}
	if !AccessibleFrom(pv)(map[string]string{topoKey: "b"}) || AccessibleFrom(pv)(map[string]string{topoKey: "c"}) {
		t.Error("AccessibleFrom does not follow the node affinity")
	}

	retained := BuildVolume(c, class(func(s *storagev1.StorageClass) {
		s.ReclaimPolicy = ptr.To(v1.PersistentVolumeReclaimRetain)
	}), testDriver, &csipb.Volume{VolumeId: "h2"})
	block := BuildVolume(claim(func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock) }),
		class(func(s *storagev1.StorageClass) { s.Parameters = map[string]string{paramFSType: "xfs"} }), testDriver, vol)
	if block.Spec.CSI.FSType != "" || *block.Spec.VolumeMode != v1.PersistentVolumeBlock {
		t.Errorf("block PV: fsType %q volumeMode %v, want no filesystem", block.Spec.CSI.FSType, block.Spec.VolumeMode)
	}
	if len(retained.Finalizers) != 0 || retained.Spec.NodeAffinity != nil || retained.Spec.Capacity.Storage().Value() != 1<<20 {
		t.Errorf("retain PV: finalizers %v affinity %v capacity %v", retained.Finalizers, retained.Spec.NodeAffinity, retained.Spec.Capacity)
	}
}

// With volplane's attacher beside the provisioner, a PV of a driver that
// attaches is born with the attacher's finalizer (one write fewer on the
// first attach); a driver that does not attach, or a translated in-tree PV,
// gets none.
func TestAttacherFinalizerIsPutOnPVsOfDriversThatAttach(t *testing.T) {
	csiPV := func() *v1.PersistentVolume {
		return &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Finalizers: []string{VolumeFinalizer}},
			Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
				CSI: &v1.CSIPersistentVolumeSource{Driver: "network.csi.volplane.io", VolumeHandle: "h"}}},
		}
	}
	if got := WithAttacherFinalizer(csiPV(), true).Finalizers; !slices.Equal(got, []string{VolumeFinalizer, "external-attacher/network-csi-volplane-io"}) {
		t.Errorf("finalizers of a PV whose driver attaches: %v", got)
	}
	if got := WithAttacherFinalizer(csiPV(), false).Finalizers; !slices.Equal(got, []string{VolumeFinalizer}) {
		t.Errorf("finalizers of a PV whose driver does not attach: %v", got)
	}
	inTree := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}}}
	if got := WithAttacherFinalizer(inTree, true).Finalizers; len(got) != 0 {
		t.Errorf("finalizers of a translated in-tree PV: %v", got)
	}
}
