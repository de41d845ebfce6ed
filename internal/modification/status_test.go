package modification

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

func condition(c *v1.PersistentVolumeClaim, t v1.PersistentVolumeClaimConditionType) *v1.PersistentVolumeClaimCondition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == t {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

func TestMarkModifyInProgress(t *testing.T) {
	before := claim(wants("fast"), withCondition(v1.PersistentVolumeClaimResizing, ""))
	keep := before.DeepCopy()
	got := MarkModifyInProgress(before, t1)
	if !apiequality.Semantic.DeepEqual(before, keep) {
		t.Fatal("the step changed its argument")
	}
	st := got.Status.ModifyVolumeStatus
	if st == nil || st.Status != v1.PersistentVolumeClaimModifyVolumeInProgress || st.TargetVolumeAttributesClassName != "fast" {
		t.Errorf("status %+v, want InProgress to fast", st)
	}
	m := condition(got, v1.PersistentVolumeClaimVolumeModifyingVolume)
	if m == nil || m.Status != v1.ConditionTrue || m.Message != `Modifying volume to "fast" is in progress.` || !m.LastTransitionTime.Equal(&t1) {
		t.Errorf("ModifyingVolume %+v", m)
	}
	if condition(got, v1.PersistentVolumeClaimResizing) == nil {
		t.Error("another condition was dropped")
	}
	if again := MarkModifyInProgress(got, metav1Later()); again != nil {
		t.Errorf("marking again changed %+v", again.Status)
	}
}

func TestMarkModifyFailed(t *testing.T) {
	inProgress := MarkModifyInProgress(claim(wants("fast")), t0)
	for _, tc := range []struct {
		name       string
		err        error
		infeasible bool
		wantStatus v1.PersistentVolumeClaimModifyVolumeStatus
		wantMsg    string
	}{
		{"infeasible", status.Error(codes.InvalidArgument, "no such tier"), true,
			v1.PersistentVolumeClaimModifyVolumeInfeasible, `Modifying volume to "fast" failed. Waiting for retry.`},
		{"final, not infeasible", status.Error(codes.NotFound, "gone"), false,
			v1.PersistentVolumeClaimModifyVolumeInProgress, `Modifying volume to "fast" failed. Waiting for retry.`},
		{"maybe still running", status.Error(codes.DeadlineExceeded, "slow"), false,
			v1.PersistentVolumeClaimModifyVolumeInProgress, `Modifying volume to "fast" is still in progress.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MarkModifyFailed(inProgress, tc.err, tc.infeasible, t1)
			if s := got.Status.ModifyVolumeStatus; s.Status != tc.wantStatus || s.TargetVolumeAttributesClassName != "fast" {
				t.Errorf("status %+v", s)
			}
			if m := condition(got, v1.PersistentVolumeClaimVolumeModifyingVolume); m.Message != tc.wantMsg {
				t.Errorf("ModifyingVolume message %q, want %q", m.Message, tc.wantMsg)
			}
			e := condition(got, v1.PersistentVolumeClaimVolumeModifyVolumeError)
			st, _ := status.FromError(tc.err)
			if e == nil || e.Reason != st.Code().String() || e.Message != st.Message() {
				t.Errorf("ModifyVolumeError %+v", e)
			}
			if MarkModifyFailed(got, tc.err, tc.infeasible, metav1Later()) != nil {
				t.Error("the same failure again changed the claim")
			}
		})
	}
}

func TestMarkModifyFinishedRecordsTheTargetAndClears(t *testing.T) {
	failed := MarkModifyFailed(MarkModifyInProgress(claim(wants("fast")), t0), status.Error(codes.Internal, "x"), false, t0)
	failed.Status.Conditions = append(failed.Status.Conditions, v1.PersistentVolumeClaimCondition{Type: v1.PersistentVolumeClaimResizing})
	got := MarkModifyFinished(failed)
	switch {
	case got.Status.ModifyVolumeStatus != nil:
		t.Errorf("status %+v left", got.Status.ModifyVolumeStatus)
	case ptr.Deref(got.Status.CurrentVolumeAttributesClassName, "") != "fast":
		t.Errorf("current class %v", got.Status.CurrentVolumeAttributesClassName)
	case len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != v1.PersistentVolumeClaimResizing:
		t.Errorf("conditions %+v, want only Resizing", got.Status.Conditions)
	}
	if MarkModifyFinished(got) != nil {
		t.Error("finishing twice changed the claim")
	}
}

func TestMarkModifyPendingKeepsTargetAndConditions(t *testing.T) {
	in := MarkModifyInProgress(claim(wants("fast")), t0)
	in.Spec.VolumeAttributesClassName = ptr.To("gold")
	got := MarkModifyPending(in)
	if s := got.Status.ModifyVolumeStatus; s.Status != v1.PersistentVolumeClaimModifyVolumePending || s.TargetVolumeAttributesClassName != "fast" {
		t.Errorf("status %+v", s)
	}
	if !apiequality.Semantic.DeepEqual(got.Status.Conditions, in.Status.Conditions) {
		t.Error("conditions changed")
	}
	if MarkModifyPending(got) != nil {
		t.Error("pending twice changed the claim")
	}
	if fresh := MarkModifyPending(claim(wants("gold"))); fresh.Status.ModifyVolumeStatus.Status != v1.PersistentVolumeClaimModifyVolumePending {
		t.Errorf("a claim without a status: %+v", fresh.Status.ModifyVolumeStatus)
	}
}

func TestMarkModifyUnsupported(t *testing.T) {
	got := MarkModifyUnsupported(claim(wants("fast")), driver, t0)
	if s := got.Status.ModifyVolumeStatus; s.Status != v1.PersistentVolumeClaimModifyVolumeInfeasible || s.TargetVolumeAttributesClassName != "fast" {
		t.Errorf("status %+v", s)
	}
	e := condition(got, v1.PersistentVolumeClaimVolumeModifyVolumeError)
	if e == nil || e.Reason != "Unimplemented" || e.Message != "CSI driver d.example.com does not support modifying volumes: controller MODIFY_VOLUME capability is not reported" {
		t.Errorf("ModifyVolumeError %+v", e)
	}
	if MarkModifyUnsupported(got, driver, t1) != nil {
		t.Error("marking again changed the claim")
	}
}

func TestMarkRolledBackDropsOnlyModifying(t *testing.T) {
	in := claim(wants(""), modifyStatus(v1.PersistentVolumeClaimModifyVolumeInfeasible, "bad"),
		withCondition(v1.PersistentVolumeClaimVolumeModifyingVolume, "m"), withCondition(v1.PersistentVolumeClaimVolumeModifyVolumeError, "e"))
	got := MarkRolledBack(in)
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != v1.PersistentVolumeClaimVolumeModifyVolumeError {
		t.Errorf("conditions %+v", got.Status.Conditions)
	}
	if got.Status.ModifyVolumeStatus == nil {
		t.Error("the status of the last attempt was dropped")
	}
	if MarkRolledBack(got) != nil {
		t.Error("rolling back twice changed the claim")
	}
}

func TestVolumeWithClass(t *testing.T) {
	pv := volume()
	if VolumeWithClass(pv, "standard") != nil {
		t.Error("the same class changed the PV")
	}
	got := VolumeWithClass(pv, "fast")
	if *got.Spec.VolumeAttributesClassName != "fast" || *pv.Spec.VolumeAttributesClassName != "standard" {
		t.Errorf("got %v, argument %v", *got.Spec.VolumeAttributesClassName, *pv.Spec.VolumeAttributesClassName)
	}
}

func TestMessagesAsTheReference(t *testing.T) {
	if got := MessageFailed(status.Error(codes.Unavailable, "down"), "fast"); got != "rpc error: code = Unavailable desc = down. Still modifying to VAC fast" {
		t.Errorf("MessageFailed = %q", got)
	}
}

// No step changes the claim it is given (it may be an informer's).
func TestStepsNeverChangeTheirArgument(t *testing.T) {
	steps := map[string]func(*v1.PersistentVolumeClaim){
		"InProgress": func(c *v1.PersistentVolumeClaim) { MarkModifyInProgress(c, t1) },
		"Failed": func(c *v1.PersistentVolumeClaim) {
			MarkModifyFailed(c, status.Error(codes.InvalidArgument, "x"), true, t1)
		},
		"Unsupported": func(c *v1.PersistentVolumeClaim) { MarkModifyUnsupported(c, driver, t1) },
		"Pending":     func(c *v1.PersistentVolumeClaim) { MarkModifyPending(c) },
		"Finished":    func(c *v1.PersistentVolumeClaim) { MarkModifyFinished(c) },
		"RolledBack":  func(c *v1.PersistentVolumeClaim) { MarkRolledBack(c) },
	}
	claims := []*v1.PersistentVolumeClaim{
		claim(wants("fast")),
		claim(wants("fast"), modifyStatus(v1.PersistentVolumeClaimModifyVolumeInProgress, "fast"),
			withCondition(v1.PersistentVolumeClaimVolumeModifyingVolume, "m"), withCondition(v1.PersistentVolumeClaimVolumeModifyVolumeError, "e")),
	}
	for name, step := range steps {
		for _, c := range claims {
			keep := c.DeepCopy()
			step(c)
			if !apiequality.Semantic.DeepEqual(c, keep) {
				t.Errorf("%s changed its argument", name)
			}
		}
	}
}
