package publication

import (
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/attachment"
)

func TestDecideWalksAnAttachmentToAttachedOneStepAtATime(t *testing.T) {
	cases := []struct {
		name    string
		in      Input
		step    Step
		reason  Reason
		errText string
	}{
		{"PV without our finalizer -> protect the PV first",
			Input{va(), pv(), csiNode(drv), publishing}, AddVolumeFinalizer, ReasonVolumeUnprotected, ""},
		{"PV marked for deletion -> refused with the reference's text",
			Input{va(), pv(pvDeleting, pvProtected), csiNode(drv), publishing}, Refuse, ReasonVolumeDeleting,
			`PersistentVolume "pv1" is marked for deletion`},
		{"PV missing -> refused with the lister's NotFound text",
			Input{va(), nil, csiNode(drv), publishing}, Refuse, ReasonVolumeNotFound, `persistentvolume "pv1" not found`},
		{"CSINode missing -> refused",
			Input{va(), pv(pvProtected), nil, publishing}, Refuse, ReasonNodeIDUnknown, `csinode.storage.k8s.io "node1" not found`},
		{"CSINode without the driver -> refused with the reference's text",
			Input{va(), pv(pvProtected), csiNode("other"), publishing}, Refuse, ReasonNodeIDUnknown,
			"CSINode node1 does not contain driver d.csi.test"},
		{"no attach fallback to the annotation",
			Input{va(annotated), pv(pvProtected), csiNode("other"), publishing}, Refuse, ReasonNodeIDUnknown,
			"CSINode node1 does not contain driver d.csi.test"},
		{"protected PV, bare attachment -> finalizer and node ID on the attachment",
			Input{va(), pv(pvProtected), csiNode(drv), publishing}, Annotate, ReasonUnannotated, ""},
		{"node ID changed -> annotate again",
			Input{va(annotated), pv(pvProtected), renumbered(csiNode(drv)), publishing}, Annotate, ReasonUnannotated, ""},
		{"everything in place -> publish",
			Input{va(annotated), pv(pvProtected), csiNode(drv), publishing}, Publish, ReasonReady, ""},
		{"attached -> at rest, nothing read",
			Input{va(annotated, attached), nil, nil, publishing}, None, ReasonAttached, ""},
		{"PV not CSI -> refused",
			Input{va(annotated), pv(pvProtected, func(p *v1.PersistentVolume) { p.Spec.CSI = nil }), csiNode(drv), publishing},
			Refuse, ReasonVolumeNotCSI, "pv spec contained non-csi source that was not migrated"},
		{"RWO with ROX -> refused",
			Input{va(annotated), pv(pvProtected, func(p *v1.PersistentVolume) {
				p.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany}
			}), csiNode(drv), publishing},
			Refuse, ReasonBadCapability, "CSI does not support ReadOnlyMany and ReadWriteOnce on the same PersistentVolume"},
		{"no source -> refused",
			Input{va(func(a *storagev1.VolumeAttachment) { a.Spec.Source = storagev1.VolumeAttachmentSource{} }), nil, csiNode(drv), publishing},
			Refuse, ReasonBadSource, "neither InlineCSIVolumeSource nor PersistentVolumeName specified in VA source"},
		{"inline CSI spec -> no PV to protect, annotate",
			Input{va(func(a *storagev1.VolumeAttachment) {
				a.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: &pv().Spec}
			}), nil, csiNode(drv), publishing}, Annotate, ReasonUnannotated, ""},
		{"driver without publish -> mark attached only",
			Input{va(), nil, nil, Capabilities{}}, MarkAttached, ReasonNoPublish, ""},
		{"driver without publish, attached -> at rest",
			Input{va(attached), nil, nil, Capabilities{}}, None, ReasonAttached, ""},
		{"driver without publish, deleted -> nothing to undo",
			Input{va(attached, vaDeleting), nil, nil, Capabilities{}}, None, ReasonDetached, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			if d.Step != tc.step || d.Reason != tc.reason {
				t.Fatalf("got %s, want %s: %s", d, tc.step, tc.reason)
			}
			if got := errText(d.Err); got != tc.errText {
				t.Errorf("error %q, want %q", got, tc.errText)
			}
			if d.Operation == Detach {
				t.Error("an attach decision marked as detach")
			}
		})
	}
}

func renumbered(n *storagev1.CSINode) *storagev1.CSINode {
	n.Spec.Drivers[0].NodeID = "id-2"
	return n
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestPublishRequestIsBuiltFromThePV(t *testing.T) {
	p := pv(pvProtected, func(p *v1.PersistentVolume) {
		p.Spec.CSI.ReadOnly = true
		p.Spec.MountOptions = []string{"noatime"}
		p.Spec.CSI.ControllerPublishSecretRef = &v1.SecretReference{Namespace: "ns", Name: "s"}
	})
	d := Decide(Input{va(annotated), p, csiNode(drv), Capabilities{Publish: true, PublishReadOnly: true}})
	req := d.Publish
	switch {
	case d.Step != Publish:
		t.Fatalf("got %s", d)
	case req.GetVolumeId() != "vol-1" || req.GetNodeId() != nodeID || !req.GetReadonly():
		t.Errorf("request %v", req)
	case req.GetVolumeContext()["k"] != "v":
		t.Errorf("volume context %v", req.GetVolumeContext())
	case req.GetVolumeCapability().GetMount().GetFsType() != "ext4" || req.GetVolumeCapability().GetMount().GetMountFlags()[0] != "noatime":
		t.Errorf("capability %v", req.GetVolumeCapability())
	case req.GetVolumeCapability().GetAccessMode().GetMode() != csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER:
		t.Errorf("mode %v", req.GetVolumeCapability().GetAccessMode())
	case d.SecretRef == nil || d.SecretRef.Name != "s":
		t.Errorf("secret ref %v", d.SecretRef)
	case len(req.GetSecrets()) != 0:
		t.Error("the pure core filled in secrets")
	}
	// Without PUBLISH_READONLY readonly is never sent.
	if d := Decide(Input{va(annotated), p, csiNode(drv), publishing}); d.Publish.GetReadonly() {
		t.Error("readonly sent to a driver without PUBLISH_READONLY")
	}
}

func TestCapabilityFoldsAccessModesAsTheSidecarsDo(t *testing.T) {
	type m = v1.PersistentVolumeAccessMode
	cases := []struct {
		modes []m
		snmw  bool
		want  csipb.VolumeCapability_AccessMode_Mode
		fails bool
	}{
		{[]m{v1.ReadWriteOnce}, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, false},
		{[]m{v1.ReadWriteOnce}, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER, false},
		{[]m{v1.ReadWriteOncePod}, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, false},
		{[]m{v1.ReadWriteOncePod}, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, false},
		{[]m{v1.ReadWriteOncePod, v1.ReadWriteOnce}, true, 0, true},
		{[]m{v1.ReadWriteMany, v1.ReadWriteOnce}, false, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, false},
		{[]m{v1.ReadOnlyMany}, false, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, false},
		{[]m{v1.ReadOnlyMany, v1.ReadWriteOnce}, false, 0, true},
		{nil, false, 0, true},
	}
	for _, tc := range cases {
		c, err := Capability(&v1.PersistentVolumeSpec{AccessModes: tc.modes}, tc.snmw)
		if tc.fails != (err != nil) || (err == nil && c.GetAccessMode().GetMode() != tc.want) {
			t.Errorf("%v snmw=%t: got %v, %v; want %v (fails %t)", tc.modes, tc.snmw, c, err, tc.want, tc.fails)
		}
	}
	block := v1.PersistentVolumeBlock
	c, _ := Capability(&v1.PersistentVolumeSpec{AccessModes: []m{v1.ReadWriteOnce}, VolumeMode: &block,
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{FSType: "ext4"}}}, false)
	if c.GetBlock() == nil || c.GetMount() != nil {
		t.Errorf("block volume capability %v", c)
	}
}

func TestDecideDetachUnpublishesWhileOurFinalizerIsThere(t *testing.T) {
	withID := func(id string) func(*storagev1.VolumeAttachment) {
		return func(a *storagev1.VolumeAttachment) { a.Annotations[attachment.NodeIDAnnotation] = id }
	}
	cases := []struct {
		name    string
		in      Input
		step    Step
		nodeID  string
		errText string
	}{
		{"deleted, annotated -> unpublish on the CSINode's ID",
			Input{va(annotated, attached, vaDeleting, withID("stale")), pv(pvProtected), csiNode(drv), publishing}, Unpublish, nodeID, ""},
		{"CSINode gone -> the annotation's ID",
			Input{va(annotated, attached, vaDeleting, withID("from-annotation")), pv(pvProtected), nil, publishing}, Unpublish, "from-annotation", ""},
		{"CSINode gone, no annotation -> refused",
			Input{va(vaDeleting, func(a *storagev1.VolumeAttachment) { a.Finalizers = []string{fin} }), pv(pvProtected), nil, publishing},
			Refuse, "", `csinode.storage.k8s.io "node1" not found`},
		{"our finalizer gone -> detached",
			Input{va(vaDeleting), nil, nil, publishing}, None, "", ""},
		{"PV gone -> refused, the volume handle is unknown",
			Input{va(annotated, vaDeleting), nil, csiNode(drv), publishing}, Refuse, "", `persistentvolume "pv1" not found`},
		{"PV being deleted does not stop a detach",
			Input{va(annotated, vaDeleting), pv(pvProtected, pvDeleting), csiNode(drv), publishing}, Unpublish, nodeID, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			if d.Step != tc.step || errText(d.Err) != tc.errText {
				t.Fatalf("got %s, want %s (%q)", d, tc.step, tc.errText)
			}
			if d.Step == Refuse && d.Operation != Detach {
				t.Error("a detach error not marked as one")
			}
			if d.Step == Unpublish && (d.Unpublish.GetNodeId() != tc.nodeID || d.Unpublish.GetVolumeId() != "vol-1") {
				t.Errorf("unpublish request %v, want node %s", d.Unpublish, tc.nodeID)
			}
		})
	}
}

func TestDecideVolumeKeepsTheFinalizerWhileAnAttachmentNamesThePV(t *testing.T) {
	cases := []struct {
		name  string
		pv    *v1.PersistentVolume
		named bool
		want  VolumeStep
	}{
		{"not deleting", pv(pvProtected), false, VolumeNone},
		{"deleting without our finalizer", pv(pvDeleting), false, VolumeNone},
		{"deleting, named by an attachment", pv(pvProtected, pvDeleting), true, VolumeKeep},
		{"deleting, no attachment", pv(pvProtected, pvDeleting), false, VolumeRemoveFinalizer},
	}
	for _, tc := range cases {
		if got := DecideVolume(tc.pv, drv, tc.named); got.Step != tc.want {
			t.Errorf("%s: got %s (%s), want %s", tc.name, got.Step, got.Reason, tc.want)
		}
	}
}
