package mounting

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/attachment"
)

func TestStepOpsStageThenPublishThenExpand(t *testing.T) {
	e := &Expansion{Mode: ExpandAndFinish}
	for _, tc := range []struct {
		step Step
		want []Op
	}{
		{Step{Action: Wait, Reason: NotAttached}, nil},
		{Step{Action: Done}, nil},
		{Step{Action: Stage}, []Op{OpStage, OpPublish}},
		{Step{Action: Stage, Expand: e}, []Op{OpStage, OpPublish, OpExpand}},
		{Step{Action: Publish}, []Op{OpPublish}},
		{Step{Action: Publish, Expand: e}, []Op{OpPublish, OpExpand}},
		{Step{Action: ExpandOnNode, Expand: e}, []Op{OpExpand}},
	} {
		if got := tc.step.Ops(); !slices.Equal(got, tc.want) {
			t.Errorf("%v (expand %v): ops %v, want %v", tc.step.Action, tc.step.Expand != nil, got, tc.want)
		}
	}
}

func TestExpansionOpsByMode(t *testing.T) {
	for _, tc := range []struct {
		mode ExpandMode
		want []ExpandOp
	}{
		{ExpandAndFinish, []ExpandOp{MarkInProgress, CallNodeExpand, FinishClaim, RecordSize}},
		{ExpandOnly, []ExpandOp{CallNodeExpand, RecordSize}},
		{FinishWithoutCall, []ExpandOp{MarkInProgress, FinishClaim, RecordSize}},
		{SkipReadOnly, []ExpandOp{WarnReadOnly, RecordSize}},
		{RecordOnly, []ExpandOp{RecordSize}},
	} {
		if got := (&Expansion{Mode: tc.mode}).Ops(); !slices.Equal(got, tc.want) {
			t.Errorf("%v: ops %v, want %v", tc.mode, got, tc.want)
		}
	}
}

// What a failed NodeExpandVolume leads to, by mode, moment and answer.
func TestExpansionFailedByAnswer(t *testing.T) {
	wrap := func(c codes.Code) error {
		return fmt.Errorf("Expander.NodeExpand failed to expand the volume : %w", status.Error(c, "no"))
	}
	for _, tc := range []struct {
		name                          string
		e                             Expansion
		err                           error
		reason                        string
		markFailed, infeasible, inUse bool
	}{
		{"online, transient", Expansion{Mode: ExpandAndFinish}, wrap(codes.Unavailable), VolumeResizeFailed, false, false, false},
		{"online, final", Expansion{Mode: ExpandAndFinish}, wrap(codes.Internal), VolumeResizeFailed, true, false, false},
		{"online, infeasible", Expansion{Mode: ExpandAndFinish}, wrap(codes.OutOfRange), VolumeResizeFailed, true, true, false},
		{"online, in use", Expansion{Mode: ExpandAndFinish}, wrap(codes.FailedPrecondition), VolumeResizeFailed, true, false, true},
		{"at mount, final", Expansion{Mode: ExpandAndFinish, AtMount: true}, wrap(codes.Internal), FailedMount, true, false, false},
		{"claim already expanded: nothing written", Expansion{Mode: ExpandOnly}, wrap(codes.Internal), VolumeResizeFailed, false, false, false},
		{"no status: transient", Expansion{Mode: ExpandAndFinish}, errors.New("connection reset"), VolumeResizeFailed, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.e.Failed("pv-1", tc.err)
			if f.EventReason != tc.reason || f.MarkFailed != tc.markFailed || f.Infeasible != tc.infeasible || f.RefusedInUse != tc.inUse {
				t.Errorf("failure %+v, want reason %s, markFailed %v, infeasible %v, refusedInUse %v",
					f, tc.reason, tc.markFailed, tc.infeasible, tc.inUse)
			}
		})
	}
	at := Expansion{Mode: ExpandAndFinish, AtMount: true, Size: resource.MustParse("2Gi")}
	want := `MountVolume.Setup failed while expanding volume for volume "pv-1" : boom`
	if got := at.Failed("pv-1", errors.New("boom")).EventMessage; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

func TestWaitMessageOnlyForReportedWaits(t *testing.T) {
	// The kubelet waits for the attachment first: only an attached volume
	// reaches MountDevice and finds its driver missing.
	notServed := func(w *World) { attachedAndReported(w); delete(w.Drivers, network) }
	notAttached := func(w *World) {
		attachedAndReported(w)
		for _, va := range w.Attachments {
			va.Status.Attached = false
		}
	}
	goingAway := func(w *World) {
		attachedAndReported(w)
		for _, va := range w.Attachments {
			va.DeletionTimestamp = &metav1.Time{}
		}
	}
	elsewhere := func(w *World) {
		w.Volumes["pv-1"].Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}}}}}
		w.Registered, w.NodeLabels = true, map[string]string{"zone": "a"}
	}
	rwopTaken := func(w *World) {
		w.Volumes["pv-1"].Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
		published(otherUID, local, false)(w)
	}
	failed := func(w *World) {
		attachedAndReported(w)
		for _, va := range w.Attachments {
			va.Status.Attached = false
			va.Status.AttachError = &storagev1.VolumeError{Message: "rpc error: boom"}
		}
	}
	for _, tc := range []struct {
		name string
		w    World
		want string
	}{
		{"plain wait", world(network, withPods(pod(podUID, "data"))), ""},
		{"claim missing: pod-level event only", world(network, withPods(pod(podUID, "missing"))), ""},
		{"driver not served", world(network, withPods(pod(podUID, "data")), notServed),
			`MountVolume.MountDevice failed for volume "pv-1" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name network.csi not found in the list of registered CSI drivers`},
		{"attach failed", world(network, withPods(pod(podUID, "data")), failed), `MountVolume.WaitForAttach failed for volume "pv-1" : rpc error: boom`},
		{"attachment not attached yet", world(network, withPods(pod(podUID, "data")), notAttached),
			`MountVolume.WaitForAttach failed for volume "pv-1" : volume h-1 is not attached for volume attachment ` + attachment.Name("h-1", network, node)},
		{"attachment being deleted", world(network, withPods(pod(podUID, "data")), goingAway),
			`MountVolume.WaitForAttach failed for volume "pv-1" : volume attachment is being deleted`},
		{"node affinity", world(local, withPods(pod(podUID, "data")), elsewhere),
			`MountVolume.NodeAffinity check failed for volume "pv-1" : no matching NodeSelectorTerms`},
		{"ReadWriteOncePod used by another pod", world(local, withPods(pod(podUID, "data")), rwopTaken),
			`MountVolume.SetUp failed for volume "pv-1" : volume uses the ReadWriteOncePod access mode and is already in use by another pod`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Decide(tc.w).Pods[0].Steps[0]
			if got := s.WaitMessage(); got != tc.want {
				t.Errorf("WaitMessage %q, want %q", got, tc.want)
			}
		})
	}
}
