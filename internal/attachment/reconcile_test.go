package attachment

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAttachedVolumeIsReportedOnTheNodeAndEachPodIsToldOnce(t *testing.T) {
	w := newWorld()
	w.volume("data")
	a, b := w.pod("a", node, "data"), w.pod("b", node, "data")
	w.attachment("data", node, true)
	p := Decide(w.f)
	want := []v1.AttachedVolume{{Name: unique("data"), DevicePath: ""}}
	if !slices.Equal(p.VolumesAttached, want) || !p.StatusChanged || len(p.Create) != 0 {
		t.Fatalf("volumesAttached %v changed %v create %v; want %v reported", p.VolumesAttached, p.StatusChanged, p.Create, want)
	}
	msg := `AttachVolume.Attach succeeded for volume "pv-data" `
	if len(p.Events) != 2 || p.Events[0].Pod != a || p.Events[1].Pod != b {
		t.Fatalf("events %+v, want one per pod", p.Events)
	}
	for _, e := range p.Events {
		if e.Type != v1.EventTypeNormal || e.Reason != SuccessfulAttachVolume || e.Message != msg {
			t.Errorf("event %+v, want Normal %s %q", e, SuccessfulAttachVolume, msg)
		}
	}
	w.reported("data")
	if p := Decide(w.f); p.StatusChanged || len(p.Events) != 0 {
		t.Errorf("once reported: changed %v events %v, want neither", p.StatusChanged, p.Events)
	}
}

func TestAttachErrorIsAFailedAttachVolumeEventPerAttacherRetry(t *testing.T) {
	w := newWorld()
	w.volume("data")
	w.pod("app", node, "data")
	va := w.attachment("data", node, false)
	va.Status.AttachError = &storagev1.VolumeError{Message: "rpc error: code = Internal desc = boom", Time: metav1.Time{Time: t0}}
	p := Decide(w.f)
	want := `AttachVolume.Attach failed for volume "pv-data" : rpc error: code = Internal desc = boom`
	if len(p.Events) != 1 || p.Events[0].Message != want || p.Events[0].Type != v1.EventTypeWarning ||
		p.Events[0].Reason != FailedAttachVolume || !slices.Equal(reasons(p), []WaitReason{AttachFailed}) {
		t.Fatalf("events %+v waits %v, want %q", p.Events, reasons(p), want)
	}
	va.Status.AttachError.Time = metav1.Time{Time: t0.Add(time.Second)}
	if again := Decide(w.f); again.Events[0].Key == p.Events[0].Key {
		t.Error("a retry of the attacher (new error time) must be a new event")
	}
	if len(p.VolumesAttached) != 0 || len(p.Create) != 0 {
		t.Errorf("a failed attachment is neither reported nor made again: %+v", p)
	}
}

func TestAttachmentNotYetAttachedWaitsForTheAttacher(t *testing.T) {
	w := newWorld()
	w.volume("data")
	w.pod("app", node, "data")
	w.attachment("data", node, false)
	if p := Decide(w.f); !slices.Equal(reasons(p), []WaitReason{Attaching}) || len(p.Events) != 0 || len(p.Create) != 0 {
		t.Errorf("plan %+v, want an Attaching wait", p)
	}
}

// The detach rules, exactly as the reference's reconciler applies them to
// an attachment no pod wants.
func TestUnwantedAttachmentIsDetachedOnlyWhenTheRulesAllow(t *testing.T) {
	const wait = 6 * time.Minute
	for name, tc := range map[string]struct {
		inUse, ready, outOfService bool
		unwantedFor                time.Duration
		want                       *DetachReason
	}{
		"not in use is detached at once":                         {ready: true, want: reason(NotInUse)},
		"in use on a Ready node waits":                           {inUse: true, ready: true},
		"in use on a Ready node waits even past the timeout":     {inUse: true, ready: true, unwantedFor: 7 * time.Minute},
		"in use on a NotReady node waits for the timeout":        {inUse: true, unwantedFor: 5 * time.Minute},
		"in use on a NotReady node past the timeout is forced":   {inUse: true, unwantedFor: 6*time.Minute + time.Second, want: reason(Timeout)},
		"in use with the out-of-service taint is forced at once": {inUse: true, ready: true, outOfService: true, want: reason(OutOfService)},
		"not in use past the timeout counts as a timeout detach": {ready: true, unwantedFor: 7 * time.Minute, want: reason(Timeout)},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld()
			w.volume("data")
			va := w.attachment("data", node, true)
			w.reported("data")
			w.f.Node.Ready, w.f.Node.OutOfService = tc.ready, tc.outOfService
			if tc.inUse {
				w.inUse("data")
			}
			w.f.MaxWaitForUnmount = wait
			if tc.unwantedFor > 0 {
				w.f.UndesiredSince = map[string]time.Time{va.Name: t0.Add(-tc.unwantedFor)}
			}
			p := Decide(w.f)
			if tc.want == nil {
				if len(p.Detach) != 0 || !slices.Equal(reasons(p), []WaitReason{StillMounted}) {
					t.Fatalf("detach %+v waits %v, want a StillMounted wait", p.Detach, reasons(p))
				}
				if len(p.VolumesAttached) != 1 || p.StatusChanged {
					t.Errorf("a waiting volume stays reported: %v", p.VolumesAttached)
				}
				return
			}
			if len(p.Detach) != 1 || p.Detach[0].Attachment != va || p.Detach[0].Reason != *tc.want || p.Detach[0].Volume != unique("data") {
				t.Fatalf("detach %+v, want %v of %s", p.Detach, *tc.want, va.Name)
			}
			if len(p.VolumesAttached) != 0 || !p.StatusChanged {
				t.Errorf("a volume to detach must leave volumesAttached first: %v changed %v", p.VolumesAttached, p.StatusChanged)
			}
		})
	}
}

func reason(r DetachReason) *DetachReason { return &r }

func TestUnmountWaitStartsAtTheFirstDecisionAndAsksForARequeue(t *testing.T) {
	w := newWorld()
	w.volume("data")
	va := w.attachment("data", node, true)
	w.inUse("data")
	w.f.MaxWaitForUnmount = time.Minute
	p := Decide(w.f)
	if got := p.UndesiredSince[va.Name]; !got.Equal(t0) {
		t.Fatalf("UndesiredSince = %v, want now", got)
	}
	if p.RequeueAfter <= 0 || p.RequeueAfter > time.Minute+time.Second {
		t.Errorf("RequeueAfter = %v, want about the wait", p.RequeueAfter)
	}
	w.f.UndesiredSince, w.f.Now = p.UndesiredSince, t0.Add(30*time.Second)
	if p := Decide(w.f); !p.UndesiredSince[va.Name].Equal(t0) {
		t.Errorf("the timer restarted: %v", p.UndesiredSince)
	}
}

func TestAttachmentBeingDeletedIsNeitherReportedNorDeletedAgainNorRemade(t *testing.T) {
	w := newWorld()
	w.volume("data")
	va := w.attachment("data", node, true)
	va.DeletionTimestamp = &metav1.Time{Time: t0}
	w.reported("data")
	p := Decide(w.f)
	if len(p.Detach) != 0 || len(p.VolumesAttached) != 0 || !p.StatusChanged {
		t.Errorf("unwanted: detach %v attached %v", p.Detach, p.VolumesAttached)
	}
	w.pod("app", node, "data")
	p = Decide(w.f)
	if len(p.Create) != 0 || !slices.Equal(reasons(p), []WaitReason{DetachInProgress}) {
		t.Errorf("wanted again: create %v waits %v, want a DetachInProgress wait", p.Create, reasons(p))
	}
}

// Detach before attach: the plan holds both, and the node's status drops
// the detached volume while it gains the attached one.
func TestOneSyncDetachesTheUnwantedAndAttachesTheWanted(t *testing.T) {
	w := newWorld()
	w.volume("old")
	w.volume("new")
	w.attachment("old", node, true)
	w.reported("old")
	w.pod("app", node, "new")
	p := Decide(w.f)
	if len(p.Detach) != 1 || len(p.Create) != 1 || len(p.VolumesAttached) != 0 || !p.StatusChanged {
		t.Errorf("plan %+v", p)
	}
}

// Once the PersistentVolume is gone, the attachment's unique name is found
// again from the node's status by its hash.
func TestAttachmentOfADeletedVolumeIsStillNamedFromTheNodeStatus(t *testing.T) {
	w := newWorld()
	w.volume("data")
	w.attachment("data", node, true)
	w.reported("data")
	w.inUse("data")
	delete(w.f.Volumes, "pv-data")
	p := Decide(w.f)
	if len(p.Detach) != 0 || !slices.Equal(reasons(p), []WaitReason{StillMounted}) ||
		!slices.Equal(p.VolumesAttached, []v1.AttachedVolume{{Name: unique("data")}}) {
		t.Errorf("plan %+v, want it kept as still mounted", p)
	}
}

// A deleted node gets nothing new, but its attachments are still decided
// on with the volumesInUse it last reported; it is never Ready.
func TestDeletedNodeWaitsForTheTimeoutWhileItsLastStatusSaysInUse(t *testing.T) {
	w := newWorld()
	w.volume("data")
	va := w.attachment("data", node, true)
	w.f.Node = NodeOf(node, nil, []v1.UniqueVolumeName{unique("data")})
	w.f.MaxWaitForUnmount = time.Minute
	if p := Decide(w.f); len(p.Detach) != 0 || p.StatusChanged {
		t.Fatalf("plan %+v, want a wait", p)
	}
	w.f.UndesiredSince = map[string]time.Time{va.Name: t0.Add(-2 * time.Minute)}
	if p := Decide(w.f); len(p.Detach) != 1 || p.Detach[0].Reason != Timeout || p.StatusChanged {
		t.Errorf("plan %+v, want a timeout detach and no status write", p)
	}
	w.volume("other")
	w.pod("late", node, "other")
	if p := Decide(w.f); len(p.Create) != 0 || !slices.Contains(reasons(p), NodeGone) {
		t.Errorf("create %v waits %v, want nothing made on a deleted node", p.Create, reasons(p))
	}
}

func TestNodeOfReadsReadinessAnnotationAndTaint(t *testing.T) {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Annotations: map[string]string{ManagedAnnotation: "false"}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: OutOfServiceTaint, Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown}},
			VolumesInUse: []v1.UniqueVolumeName{"u"}}}
	got := NodeOf(node, n, nil)
	if !got.Exists || !got.Managed || !got.OutOfService || got.Ready || len(got.VolumesInUse) != 1 {
		t.Errorf("NodeOf = %+v: the annotation counts whatever its value, the taint whatever its effect, Unknown is not Ready", got)
	}
}

func TestCountsAreByPluginAndDriver(t *testing.T) {
	w := newWorld()
	w.volume("data")
	w.pod("a", node, "data")
	w.pod("b", node, "data")
	w.attachment("data", node, true)
	c := Decide(w.f).Counts
	k := "kubernetes.io/csi:" + drv
	if desired, attached, inUse := c.Sum(); desired[k] != 1 || attached[k] != 1 || inUse[k] != 2 {
		t.Errorf("counts %+v", c)
	}
}

// oneAttachedUnreported is a node with two attached volumes, "old" in its
// volumesAttached, "new" not yet: a patch that only adds one is due.
func oneAttachedUnreported() *world {
	w := newWorld()
	w.volume("old")
	w.volume("new")
	w.pod("a", node, "old")
	w.pod("b", node, "new")
	w.attachment("old", node, true)
	w.attachment("new", node, true)
	w.reported("old")
	return w
}

// A node whose patches keep having to wait is reported less often, down to
// every four base intervals; one patch that did not wait makes it quiet
// again.
func TestStatusPaceGrowsWhileTheNodeIsBusy(t *testing.T) {
	base := 500 * time.Millisecond
	var s StatusPace
	var got []time.Duration
	for i := range 4 {
		s = s.Deferred().Written(t0.Add(time.Duration(i) * time.Second))
		got = append(got, s.Interval(base))
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("intervals after patches that waited: %v, want %v", got, want)
	}
	if s = s.Written(t0.Add(5 * time.Second)); s.Interval(base) != base || s.Waited || !s.WrittenAt.Equal(t0.Add(5*time.Second)) {
		t.Errorf("after a patch that did not wait: %+v, interval %v; want the base", s, s.Interval(base))
	}
	if (StatusPace{Streak: 2}).Interval(0) != 0 {
		t.Error("no base interval must mean no wait")
	}

	// Decide waits out the grown interval.
	w := oneAttachedUnreported()
	w.f.StatusInterval = base
	w.f.Status = StatusPace{WrittenAt: t0.Add(-time.Second), Streak: 2}
	if p := Decide(w.f); !p.StatusDeferred || p.RequeueAfter != time.Second {
		t.Errorf("1s after a busy node's patch: deferred %v requeue %v, want 1s more", p.StatusDeferred, p.RequeueAfter)
	}
	w.f.Status.Streak = 0
	if p := Decide(w.f); !p.StatusChanged || p.StatusDeferred {
		t.Errorf("1s after a quiet node's patch: changed %v deferred %v, want the patch now", p.StatusChanged, p.StatusDeferred)
	}
}

// A patch that only adds volumes waits out StatusInterval from the last
// one, and asks for the node again when it ends; a removal never waits.
func TestStatusPatchesThatOnlyAddWaitForTheInterval(t *testing.T) {
	w := oneAttachedUnreported()
	w.f.StatusInterval = 500 * time.Millisecond

	w.f.Status.WrittenAt = t0.Add(-200 * time.Millisecond)
	p := Decide(w.f)
	if p.StatusChanged || !p.StatusDeferred || p.RequeueAfter != 300*time.Millisecond || len(p.VolumesAttached) != 2 {
		t.Fatalf("200ms after a patch: changed %v deferred %v requeue %v attached %v; want deferred 300ms with both",
			p.StatusChanged, p.StatusDeferred, p.RequeueAfter, p.VolumesAttached)
	}
	if len(p.Events) != 1 || p.Events[0].Reason != SuccessfulAttachVolume {
		t.Errorf("events %+v: the attach happened, its event need not wait", p.Events)
	}
	for name, f := range map[string]func(*Facts){
		"once the interval is over":  func(f *Facts) { f.Now = t0.Add(300 * time.Millisecond) },
		"with no patch since start":  func(f *Facts) { f.Status.WrittenAt = time.Time{} },
		"with no interval":           func(f *Facts) { f.StatusInterval = 0 },
		"when the patch removes one": func(f *Facts) { w.f.Pods = w.f.Pods[1:]; f.Attachments = f.Attachments[1:] },
	} {
		saved := w.f
		saved.Pods, saved.Attachments = slices.Clone(w.f.Pods), slices.Clone(w.f.Attachments)
		f(&w.f)
		if p := Decide(w.f); !p.StatusChanged || p.StatusDeferred {
			t.Errorf("%s: changed %v deferred %v, want the patch now", name, p.StatusChanged, p.StatusDeferred)
		}
		w.f = saved
	}
}
