package publication

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/attachment"
)

func TestVolumeFinalizerPatchIsTheReferencesJSONPatch(t *testing.T) {
	cases := []struct {
		name string
		pv   *v1.PersistentVolume
		want string
	}{
		{"no finalizers: test for none, then add the list", pv(),
			`[{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["external-attacher/d-csi-test"]}]`},
		{"empty list: test it, then replace", pv(func(p *v1.PersistentVolume) { p.Finalizers = []string{} }),
			`[{"op":"test","path":"/metadata/finalizers","value":[]},{"op":"replace","path":"/metadata/finalizers","value":["external-attacher/d-csi-test"]}]`},
		{"other finalizers: append", pv(func(p *v1.PersistentVolume) { p.Finalizers = []string{"kubernetes.io/pv-protection"} }),
			`[{"op":"add","path":"/metadata/finalizers/-","value":"external-attacher/d-csi-test"}]`},
		{"ours already: nothing", pv(pvProtected), ""},
	}
	for _, tc := range cases {
		if got := string(VolumeFinalizerPatch(tc.pv, drv)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestVolumeFinalizerRemovalPatchTestsTheIndex(t *testing.T) {
	p := pv(func(p *v1.PersistentVolume) { p.Finalizers = []string{"kubernetes.io/pv-protection", fin} })
	want := `[{"op":"test","path":"/metadata/finalizers/1","value":"external-attacher/d-csi-test"},{"op":"remove","path":"/metadata/finalizers/1"}]`
	if got := string(VolumeFinalizerRemovalPatch(p, drv)); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if VolumeFinalizerRemovalPatch(pv(), drv) != nil {
		t.Error("a patch for a PV without our finalizer")
	}
}

func TestStepsReturnCopiesOrNil(t *testing.T) {
	bare := va()
	a := Annotated(bare, nodeID)
	if a == nil || a.Finalizers[0] != fin || a.Annotations[attachment.NodeIDAnnotation] != nodeID {
		t.Fatalf("Annotated = %v", a)
	}
	if len(bare.Finalizers) != 0 || bare.Annotations != nil {
		t.Error("Annotated changed its argument")
	}
	if Annotated(a, nodeID) != nil {
		t.Error("Annotated of an annotated attachment is not nil")
	}
	if Annotated(a, "id-2") == nil {
		t.Error("a changed node ID is not written")
	}
	done := Attached(bare, map[string]string{"dev": "/x"})
	if done == nil || !done.Status.Attached || done.Status.AttachmentMetadata["dev"] != "/x" || bare.Status.Attached {
		t.Fatalf("Attached = %v", done)
	}
	if Attached(done, map[string]string{"dev": "/x"}) != nil {
		t.Error("Attached twice is not nil")
	}
	gone := WithoutFinalizer(a)
	if gone == nil || len(gone.Finalizers) != 0 || len(a.Finalizers) != 1 {
		t.Fatalf("WithoutFinalizer = %v", gone)
	}
	if WithoutFinalizer(gone) != nil {
		t.Error("WithoutFinalizer twice is not nil")
	}
	if cleared := Detached(done); cleared == nil || cleared.Status.Attached || cleared.Status.AttachmentMetadata != nil {
		t.Errorf("Detached = %v", cleared)
	}
	if Detached(bare) != nil {
		t.Error("Detached of a never attached attachment is not nil")
	}
}

func TestAttachErrorsCarryTheDriversCodeDetachErrorsNone(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	grpcErr := status.Error(codes.ResourceExhausted, "full")
	a := WithError(va(), grpcErr, Attach, now)
	e := a.Status.AttachError
	if e == nil || e.Message != "rpc error: code = ResourceExhausted desc = full" || e.ErrorCode == nil ||
		*e.ErrorCode != int32(codes.ResourceExhausted) || !e.Time.Time.Equal(now) {
		t.Fatalf("attach error %+v", e)
	}
	if e := WithError(va(), errors.New("CSINode x does not contain driver y"), Attach, now).Status.AttachError; e.ErrorCode != nil {
		t.Errorf("a local error got code %d", *e.ErrorCode)
	}
	d := WithError(va(), grpcErr, Detach, now).Status
	if d.DetachError == nil || d.DetachError.ErrorCode != nil || d.AttachError != nil {
		t.Errorf("detach error %+v", d)
	}
}

func TestOnlyErrorsChangedKeepsTheBackoff(t *testing.T) {
	old := va()
	old.ResourceVersion = "1"
	withErr := WithError(old, errors.New("x"), Attach, time.Now())
	withErr.ResourceVersion = "2"
	if !OnlyErrorsChanged(old, withErr) {
		t.Error("an attach error alone woke the attachment")
	}
	other := withErr.DeepCopy()
	other.Spec.NodeName = "node2"
	if OnlyErrorsChanged(old, other) {
		t.Error("a spec change with an error was ignored")
	}
	if OnlyErrorsChanged(withErr, withErr) {
		t.Error("a resync (same version) was ignored")
	}
	fixed := withErr.DeepCopy()
	fixed.ResourceVersion = "3"
	fixed.Status.AttachError = nil
	fixed.Status.Attached = true
	if OnlyErrorsChanged(withErr, fixed) {
		t.Error("becoming attached was ignored")
	}
}
