package publication

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/fuzzing"
)

// fuzzInput decodes an attachment sync: the attachment (PV or inline
// source, finalizer, node-ID annotation, deletion), the PV (any access
// modes, protected or not, deleting or not), the node's CSINode entries.
func fuzzInput(in *fuzzing.Input) Input {
	a := va()
	switch in.Intn(4) {
	case 1:
		a.Spec.Source.PersistentVolumeName = nil
		a.Spec.Source.InlineVolumeSpec = &pv().Spec
	case 2:
		a.Spec.Source.InlineVolumeSpec = &pv().Spec
	case 3:
		a.Spec.Source.PersistentVolumeName = ptr.To(in.Word("pv1", "pv2"))
	}
	if in.Bool() {
		a.Finalizers = []string{fin}
	}
	if in.Bool() {
		metav1.SetMetaDataAnnotation(&a.ObjectMeta, attachment.NodeIDAnnotation, in.Word(nodeID, ""))
	}
	a.Status.Attached = in.Intn(4) == 0
	if in.Intn(3) == 0 {
		a.DeletionTimestamp = &metav1.Time{}
	}
	input := Input{Attachment: a, Capabilities: Capabilities{Publish: in.Intn(4) > 0, PublishReadOnly: in.Bool(), SingleNodeMultiWriter: in.Bool()}}
	if in.Intn(4) > 0 {
		p := pv()
		p.Spec.AccessModes = in.AccessModes()
		p.Spec.VolumeMode = in.VolumeMode()
		if in.Intn(6) == 0 {
			p.Spec.CSI = nil
		}
		if in.Bool() {
			p.Finalizers = []string{fin}
		}
		if in.Intn(4) == 0 {
			p.DeletionTimestamp = &metav1.Time{}
		}
		input.Volume = p
	}
	if in.Intn(4) > 0 {
		input.CSINode = csiNode(fuzzing.Pick(in, drv, "other.csi.test"))
	}
	return input
}

// FuzzDecide: ControllerPublishVolume is only ever sent for an attachment
// that is not being deleted, carries our finalizer and the node's ID, whose
// PV (when it names one) exists, is not being deleted and is protected,
// with that PV's handle and the ID the node registered; an unpublish only
// for an attachment being deleted that still carries the finalizer.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(fuzzing.New(data))
		d := Decide(in)
		_ = d.String()
		va := in.Attachment
		protected := slices.Contains(va.Finalizers, fin)
		switch d.Step {
		case Publish:
			spec := in.Volume
			if va.DeletionTimestamp != nil || va.Status.Attached || !protected || va.Annotations[attachment.NodeIDAnnotation] != d.NodeID {
				t.Fatalf("publish of attachment %+v", va)
			}
			if va.Spec.Source.PersistentVolumeName != nil && (spec == nil || spec.DeletionTimestamp != nil || !slices.Contains(spec.Finalizers, fin)) {
				t.Fatalf("publish of a PV missing, deleting or unprotected")
			}
			if id, err := NodeID(in.CSINode, drv, node); err != nil || d.Publish.NodeId != id {
				t.Fatalf("publish to node ID %q, the node registered %q (%v)", d.Publish.NodeId, id, err)
			}
			if m := d.Publish.VolumeCapability.GetAccessMode().GetMode(); m == 0 {
				t.Fatalf("publish without an access mode")
			}
		case Unpublish:
			if va.DeletionTimestamp == nil || !protected || d.Unpublish.NodeId != d.NodeID {
				t.Fatalf("unpublish of attachment %+v: %s", va, d)
			}
		}
	})
}

// FuzzCapability: ReadWriteOncePod never goes with another mode, and the
// modes CSI cannot say together are refused rather than narrowed.
func FuzzCapability(f *testing.F) {
	f.Add([]byte{2, 0, 3, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzing.New(data)
		spec := &v1.PersistentVolumeSpec{AccessModes: in.AccessModes(), VolumeMode: in.VolumeMode()}
		c, err := Capability(spec, in.Bool())
		has := func(m v1.PersistentVolumeAccessMode) bool { return slices.Contains(spec.AccessModes, m) }
		others := slices.ContainsFunc(spec.AccessModes, func(m v1.PersistentVolumeAccessMode) bool { return m != v1.ReadWriteOncePod })
		if has(v1.ReadWriteOncePod) && others && err == nil {
			t.Fatalf("modes %v accepted as %v", spec.AccessModes, c)
		}
		if has(v1.ReadOnlyMany) && has(v1.ReadWriteOnce) && !has(v1.ReadWriteMany) && err == nil {
			t.Fatalf("modes %v accepted as %v", spec.AccessModes, c)
		}
		if err == nil && c.GetAccessMode().GetMode() == 0 {
			t.Fatalf("modes %v: no CSI mode", spec.AccessModes)
		}
	})
}
