package mounting

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func csiDriverWithPeriod(seconds *int64) *storagev1.CSIDriver {
	return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true), NodeAllocatableUpdatePeriodSeconds: seconds}}
}

func TestUpdatePeriodIsTheDriversAndNeverBelowTheAPIMinimum(t *testing.T) {
	for _, tc := range []struct {
		name   string
		driver *storagev1.CSIDriver
		want   time.Duration
	}{
		{"no CSIDriver", nil, 0},
		{"no period", csiDriverWithPeriod(nil), 0},
		{"30s", csiDriverWithPeriod(ptr.To[int64](30)), 30 * time.Second},
		{"1s, refused by the API, raised", csiDriverWithPeriod(ptr.To[int64](1)), MinAllocatableUpdatePeriod},
		{"0, raised", csiDriverWithPeriod(ptr.To[int64](0)), MinAllocatableUpdatePeriod},
	} {
		if got := UpdatePeriod(tc.driver); got != tc.want {
			t.Errorf("%s: period %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDecideRefresh(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	p30 := csiDriverWithPeriod(ptr.To[int64](30))
	for _, tc := range []struct {
		name      string
		driver    *storagev1.CSIDriver
		st        AllocatableState
		now       time.Time
		want      Refresh
		wantSince time.Time
		wantAfter time.Duration
	}{
		{"no period: never, even exhausted", csiDriverWithPeriod(nil), AllocatableState{Exhausted: true}, t0, NoUpdatePeriod, time.Time{}, 0},
		{"first sight: ticker starts", p30, AllocatableState{}, t0, NotDue, t0, 30 * time.Second},
		{"before the period", p30, AllocatableState{Period: 30 * time.Second, Since: t0}, t0.Add(10 * time.Second), NotDue, t0, 20 * time.Second},
		{"period passed", p30, AllocatableState{Period: 30 * time.Second, Since: t0}, t0.Add(31 * time.Second), RefreshPeriodic, t0.Add(31 * time.Second), 30 * time.Second},
		{"exhausted: at once", p30, AllocatableState{Period: 30 * time.Second, Since: t0, Exhausted: true}, t0.Add(time.Second), RefreshAttachExhausted, t0.Add(time.Second), 30 * time.Second},
		{"period changed: ticker restarts", csiDriverWithPeriod(ptr.To[int64](60)), AllocatableState{Period: 30 * time.Second, Since: t0}, t0.Add(40 * time.Second), NotDue, t0.Add(40 * time.Second), time.Minute},
	} {
		got, st, after := DecideRefresh(tc.driver, tc.st, tc.now)
		if got != tc.want || !st.Since.Equal(tc.wantSince) || after != tc.wantAfter || st.Exhausted {
			t.Errorf("%s: %s since %v after %v exhausted %v; want %s since %v after %v", tc.name, got, st.Since, after, st.Exhausted, tc.want, tc.wantSince, tc.wantAfter)
		}
		if got.Asks() != (got == RefreshPeriodic || got == RefreshAttachExhausted) {
			t.Errorf("%s: Asks() %v for %s", tc.name, got.Asks(), got)
		}
	}
}

func attachmentFailed(code *int32, attached bool) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "node-1"}}
	va.Status.Attached = attached
	if code != nil {
		va.Status.AttachError = &storagev1.VolumeError{Message: "no room", ErrorCode: code,
			Time: metav1.NewTime(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))}
	}
	return va
}

func TestExhaustedFailureIsOnePerFailure(t *testing.T) {
	exhaustedCode, internal := int32(codes.ResourceExhausted), int32(codes.Internal)
	if got := ExhaustedFailure(attachmentFailed(&exhaustedCode, false)); got != "va-1@2026-11-28T04:00:00Z" {
		t.Errorf("exhausted: %q", got)
	}
	for name, va := range map[string]*storagev1.VolumeAttachment{
		"no error": attachmentFailed(nil, false), "internal": attachmentFailed(&internal, false),
		"attached since": attachmentFailed(&exhaustedCode, true), "nil": nil,
	} {
		if got := ExhaustedFailure(va); got != "" {
			t.Errorf("%s: %q, want none", name, got)
		}
	}
	later := attachmentFailed(&exhaustedCode, false)
	later.Status.AttachError.Time = metav1.NewTime(later.Status.AttachError.Time.Add(time.Second))
	if ExhaustedFailure(later) == ExhaustedFailure(attachmentFailed(&exhaustedCode, false)) {
		t.Error("the attacher's next failure has the same key as the first")
	}
}

// limitWorld is a node with one pod waiting for the attachment va-1 of
// driver d.
func limitWorld(driver *storagev1.CSIDriver, va *storagev1.VolumeAttachment) (World, PodPlan) {
	w := World{Node: "node-1", CSIDrivers: map[string]*storagev1.CSIDriver{}, Attachments: map[string]*storagev1.VolumeAttachment{}}
	if driver != nil {
		w.CSIDrivers["d"] = driver
	}
	if va != nil {
		w.Attachments[va.Name] = va
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	v := &Volume{Driver: "d", Handle: "h", Attachable: true, Attachment: "va-1"}
	return w, PodPlan{Pod: pod, Steps: []Step{
		{Name: "b-data", Action: Wait, Reason: NotAttached, Volume: v},
		{Name: "a-logs", Action: Done, Volume: &Volume{Driver: "other"}},
	}}
}

func TestAttachLimitRejectionIsTheKubelets(t *testing.T) {
	code, internal := int32(codes.ResourceExhausted), int32(codes.Internal)
	p30 := csiDriverWithPeriod(ptr.To[int64](30))
	other := attachmentFailed(&code, false)
	other.Spec.NodeName = "node-2"
	for _, tc := range []struct {
		name      string
		driver    *storagev1.CSIDriver
		va        *storagev1.VolumeAttachment
		waitedOut bool
		reject    bool
	}{
		{"exhausted, waited out", p30, attachmentFailed(&code, false), true, true},
		{"exhausted, still waiting", p30, attachmentFailed(&code, false), false, false},
		{"no period: waits on", csiDriverWithPeriod(nil), attachmentFailed(&code, false), true, false},
		{"no CSIDriver", nil, attachmentFailed(&code, false), true, false},
		{"another error", p30, attachmentFailed(&internal, false), true, false},
		{"no attachment yet", p30, nil, true, false},
		{"an attachment of another node under the name", p30, other, true, false},
	} {
		w, pp := limitWorld(tc.driver, tc.va)
		msg := pp.AttachLimitRejection(w, tc.waitedOut)
		if (msg != "") != tc.reject {
			t.Errorf("%s: rejection %q, want reject=%v", tc.name, msg, tc.reject)
		}
		if !pp.WaitsForAttach() {
			t.Errorf("%s: the pod waits for an attachment", tc.name)
		}
	}
	w, pp := limitWorld(p30, attachmentFailed(&code, false))
	want := "Node has reached its volume attachment limit, rejecting pod. unmounted volumes=[b-data], unattached volumes=[b-data], failed to process volumes=[]: context deadline exceeded"
	if got := pp.AttachLimitRejection(w, true); got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
	pp.Steps[0].Action = Done
	if got := pp.AttachLimitRejection(w, true); got != "" {
		t.Errorf("a ready pod is rejected: %q", got)
	}
}

func TestRejectedStatusIsFailedWithTheReason(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: "example.com/Gate", Status: corev1.ConditionTrue}}}}
	got := RejectedStatus(pod, VolumeAttachmentLimitExceeded, "no room", now).Status
	if got.Phase != corev1.PodFailed || got.Reason != VolumeAttachmentLimitExceeded || got.Message != "Pod was rejected: no room" ||
		got.QOSClass != corev1.PodQOSBestEffort || got.StartTime == nil || len(got.Conditions) != 1 || got.Conditions[0].Type != "example.com/Gate" {
		t.Errorf("status %+v", got)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Error("the pod given was changed")
	}
}
