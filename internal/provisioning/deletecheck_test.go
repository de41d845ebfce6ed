package provisioning

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// releasedPV is a Released Delete PV of ours, once bound to claim ns/data.
func releasedPV(mods ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	pv := BuildVolume(claim(), class(), testDriver, &v1csiVolume)
	pv.UID = "pv-uid"
	pv.Status.Phase = v1.VolumeReleased
	for _, m := range mods {
		m(pv)
	}
	return pv
}

// The live PV is checked again right before its backend volume is deleted:
// any change since the informer's copy that takes it out of "Released under
// Delete, still the claim's that went away" keeps the data.
func TestLivePVIsCheckedAgainBeforeDeletion(t *testing.T) {
	cached := releasedPV()
	for _, tc := range []struct {
		name string
		live *v1.PersistentVolume
		want string // a fragment of the reason, "" for "delete"
	}{
		{"unchanged", releasedPV(), ""},
		{"being deleted with our finalizer", releasedPV(func(pv *v1.PersistentVolume) { pv.DeletionTimestamp = &metav1.Time{} }), ""},
		{"switched to Retain", releasedPV(func(pv *v1.PersistentVolume) {
			pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
		}), "reclaim policy is now Retain"},
		{"replaced by a PV of the same name", releasedPV(func(pv *v1.PersistentVolume) { pv.UID = "other" }), "replaced"},
		{"bound again", releasedPV(func(pv *v1.PersistentVolume) { pv.Status.Phase = v1.VolumeBound }), "now Bound"},
		{"made Available again", releasedPV(func(pv *v1.PersistentVolume) {
			pv.Status.Phase = v1.VolumeAvailable
			pv.Spec.ClaimRef = nil
		}), "now Available"},
		{"claimRef cleared", releasedPV(func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef = nil }), "names no claim"},
		{"claimRef to another claim", releasedPV(func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef.UID = types.UID("uid-2") }), "now names claim ns/data (UID uid-2)"},
		{"being deleted, our finalizer gone", releasedPV(func(pv *v1.PersistentVolume) {
			pv.DeletionTimestamp = &metav1.Time{}
			pv.Finalizers = nil
		}), "without our finalizer"},
	} {
		got := WhyNotDelete(cached, tc.live)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: WhyNotDelete = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Like the external-provisioner, a volume a VolumeAttachment still names is
// not deleted, for drivers that attach volumes.
func TestAttachedVolumeIsNotDeleted(t *testing.T) {
	va := func(pv, node string) *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Attacher: testDriver, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}}}
	}
	inline := &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{NodeName: "c",
		Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &v1.PersistentVolumeSpec{}}}}
	for _, tc := range []struct {
		name    string
		publish bool
		vas     []*storagev1.VolumeAttachment
		want    string
	}{
		{"attached", true, []*storagev1.VolumeAttachment{inline, va("other", "a"), va("pvc-1", "b")}, "persistentvolume pvc-1 is still attached to node b"},
		{"not attached", true, []*storagev1.VolumeAttachment{inline, va("other", "a")}, ""},
		{"a driver without an attach step", false, []*storagev1.VolumeAttachment{va("pvc-1", "b")}, ""},
	} {
		err := AttachmentBlocks("pvc-1", tc.publish, tc.vas)
		if got := errString(err); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestAffinityIsDescribedForPeople(t *testing.T) {
	pv := releasedPV(func(pv *v1.PersistentVolume) {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
			{MatchExpressions: []v1.NodeSelectorRequirement{{Key: topoKey, Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}}},
			{MatchExpressions: []v1.NodeSelectorRequirement{
				{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"z1", "z2"}},
				{Key: "rack", Operator: v1.NodeSelectorOpIn, Values: []string{"r"}}}},
		}}}
	})
	want := topoKey + " in [a] or zone in [z1,z2] and rack in [r]"
	if got := DescribeAffinity(pv); got != want {
		t.Errorf("DescribeAffinity = %q, want %q", got, want)
	}
	if got := DescribeAffinity(releasedPV()); got != "every node (no node affinity)" {
		t.Errorf("without affinity: %q", got)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
