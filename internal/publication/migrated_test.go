package publication

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
)

const pwx = "pxd.portworx.com"

// portworxPV is an in-tree Portworx PV whose secret annotations the
// translation turns into every secret reference of the CSI source.
func portworxPV(mods ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", Annotations: map[string]string{
		"openstorage.io/auth-secret-name": "px-creds", "openstorage.io/auth-secret-namespace": "px-system"}},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:  []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			MountOptions: []string{"noatime"},
			PersistentVolumeSource: v1.PersistentVolumeSource{PortworxVolume: &v1.PortworxVolumeSource{
				VolumeID: "px-1", FSType: "xfs", ReadOnly: true}},
		}}
	for _, m := range mods {
		m(p)
	}
	return p
}

func pwxVA(mods ...func(*storagev1.VolumeAttachment)) *storagev1.VolumeAttachment {
	return va(append([]func(*storagev1.VolumeAttachment){func(a *storagev1.VolumeAttachment) {
		a.Spec.Attacher = pwx
		a.Finalizers = []string{attachment.Finalizer(pwx)}
		metav1.SetMetaDataAnnotation(&a.ObjectMeta, attachment.NodeIDAnnotation, nodeID)
	}}, mods...)...)
}

func pwxProtected(p *v1.PersistentVolume) { p.Finalizers = []string{attachment.Finalizer(pwx)} }

// A VolumeAttachment of a migrated in-tree PV is published as the
// external-attacher publishes it: with the CSI source csi-translation-lib
// makes of the PV (handle, fsType, attributes, the controller-publish
// secret), the PV's access modes and mount options.
func TestMigratedPVIsPublishedWithItsTranslatedSource(t *testing.T) {
	in := Input{pwxVA(), portworxPV(), csiNode(pwx), Capabilities{Publish: true, PublishReadOnly: true}}
	if d := Decide(in); d.Step != AddVolumeFinalizer {
		t.Fatalf("unprotected in-tree PV: %v, want its finalizer first", d)
	}
	in.Volume = portworxPV(pwxProtected)
	d := Decide(in)
	if d.Step != Publish {
		t.Fatalf("decision %v, want Publish", d)
	}
	r := d.Publish
	mount := r.VolumeCapability.GetMount()
	// Portworx's translation does not carry readOnly over: neither is it sent.
	if r.VolumeId != "px-1" || r.NodeId != nodeID || r.Readonly || mount == nil || mount.FsType != "xfs" ||
		len(mount.MountFlags) != 1 || mount.MountFlags[0] != "noatime" || !maps.Equal(r.VolumeContext, map[string]string{}) {
		t.Errorf("request %+v is not the translated PV's", r)
	}
	if d.SecretRef == nil || *d.SecretRef != (v1.SecretReference{Name: "px-creds", Namespace: "px-system"}) {
		t.Errorf("secret %+v, want the translated controllerPublishSecretRef", d.SecretRef)
	}
	if in.Volume.Spec.CSI != nil || in.Volume.Spec.PortworxVolume == nil {
		t.Error("the PV read was modified")
	}
	in.Attachment = pwxVA(vaDeleting)
	if d := Decide(in); d.Step != Unpublish || d.Unpublish.VolumeId != "px-1" || d.SecretRef == nil {
		t.Errorf("detach: %v %+v, want an unpublish of px-1 with the secret", d, d.Unpublish)
	}
}

func TestMigratedPVThatCannotBeTranslatedIsRefused(t *testing.T) {
	bad := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", Finalizers: []string{attachment.Finalizer("ebs.csi.aws.com")}},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://z/nope"}}}}
	in := Input{va(func(a *storagev1.VolumeAttachment) { a.Spec.Attacher = "ebs.csi.aws.com" }), bad, csiNode("ebs.csi.aws.com"), publishing}
	d := Decide(in)
	want := "failed to translate in tree pv to CSI: failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume (aws://z/nope)"
	if d.Step != Refuse || d.Reason != ReasonTranslationFailed || d.Err == nil || d.Err.Error() != want {
		t.Errorf("decision %v, want refused: %s", d, want)
	}
}

// iscsi and fc are not migrated: an attachment naming such a PV is refused
// as any non-CSI PV is.
func TestNonMigratedInTreePVIsRefusedAsNotCSI(t *testing.T) {
	iscsi := pv(pvProtected, func(p *v1.PersistentVolume) {
		p.Spec.CSI = nil
		p.Spec.ISCSI = &v1.ISCSIPersistentVolumeSource{TargetPortal: "t", IQN: "iqn.x", Lun: 0}
	})
	if d := Decide(Input{va(annotated), iscsi, csiNode(drv), publishing}); d.Step != Refuse || d.Reason != ReasonVolumeNotCSI {
		t.Errorf("decision %v, want VolumeNotCSI", d)
	}
}

// A migrated inline volume's attachment carries the translated spec: it is
// published from that spec, with no PV to protect.
func TestMigratedInlineAttachmentIsPublishedFromItsSpec(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
	vol, ok, err := attachment.FromInline(pod, &v1.Volume{Name: "d", VolumeSource: v1.VolumeSource{
		GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-1", FSType: "ext4"}}})
	if !ok || err != nil {
		t.Fatalf("FromInline: %v %v", ok, err)
	}
	a := attachment.NewAttachment(&attachment.Desired{Volume: vol, AttachRequired: true}, node)
	a.Finalizers = []string{attachment.Finalizer(vol.Driver)}
	a.Annotations = map[string]string{attachment.NodeIDAnnotation: nodeID}
	d := Decide(Input{a, nil, csiNode(vol.Driver), publishing})
	if d.Step != Publish || d.Publish.VolumeId != "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-1" ||
		d.Publish.VolumeCapability.GetMount().GetFsType() != "ext4" || d.Publish.VolumeContext["partition"] != "" {
		t.Errorf("decision %v request %+v", d, d.Publish)
	}
	if a.Spec.Source.PersistentVolumeName != nil || ptr.Deref(a.Spec.Source.InlineVolumeSpec.VolumeMode, "") != v1.PersistentVolumeFilesystem {
		t.Errorf("source %+v", a.Spec.Source)
	}
}

// The external-attacher gives back an in-tree PV whose migrated-to
// annotation does not name its driver (a PV made by hand has none): the
// finalizer goes as soon as no attachment names it, deleted or not. One
// that names the driver, or a CSI PV, keeps it until deleted.
func TestUnclaimedMigratedPVLosesTheFinalizerOnceUnattached(t *testing.T) {
	claimed := func(p *v1.PersistentVolume) { p.Annotations["pv.kubernetes.io/migrated-to"] = pwx }
	for name, tc := range map[string]struct {
		pv    *v1.PersistentVolume
		named bool
		want  VolumeStep
	}{
		"unannotated, unattached":   {portworxPV(pwxProtected), false, VolumeRemoveFinalizer},
		"unannotated, attached":     {portworxPV(pwxProtected), true, VolumeKeep},
		"migrated to the driver":    {portworxPV(pwxProtected, claimed), false, VolumeNone},
		"CSI PV, not being deleted": {pv(func(p *v1.PersistentVolume) { p.Finalizers = []string{attachment.Finalizer(pwx)} }), false, VolumeNone},
	} {
		if got := DecideVolume(tc.pv, pwx, tc.named); got.Step != tc.want {
			t.Errorf("%s: %v, want %v", name, got.Step, tc.want)
		}
	}
}
