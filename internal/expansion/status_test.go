package expansion

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var at = metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))

// conditionsOf lists a claim's condition types with their messages.
func conditionsOf(c *v1.PersistentVolumeClaim) map[v1.PersistentVolumeClaimConditionType]string {
	out := map[v1.PersistentVolumeClaimConditionType]string{}
	for _, cond := range c.Status.Conditions {
		out[cond.Type] = cond.Message
	}
	return out
}

func TestControllerResizeInProgressRecordsTheSizeAskedFor(t *testing.T) {
	c := claim(requesting("2Mi"), annotated(AnnNodeExpansionNotRequired, "true"),
		withCondition("Unused", "kept"), withCondition(v1.PersistentVolumeClaimControllerResizeError, "old"))
	out := MarkControllerResizeInProgress(c, qty("2Mi"), at)
	if out == nil {
		t.Fatal("nothing to write")
	}
	if ResizeStatus(out) != ctrlInProgress || out.Status.AllocatedResources.Storage().Cmp(qty("2Mi")) != 0 {
		t.Errorf("status %+v", out.Status)
	}
	want := map[v1.PersistentVolumeClaimConditionType]string{"Unused": "kept", v1.PersistentVolumeClaimResizing: ""}
	if got := conditionsOf(out); len(got) != 2 || got["Unused"] != "kept" || got[v1.PersistentVolumeClaimResizing] != "" {
		t.Errorf("conditions %v, want %v (the old error dropped: a new size starts afresh)", got, want)
	}
	if _, ok := out.Annotations[AnnNodeExpansionNotRequired]; ok {
		t.Error("node-expansion-not-required kept")
	}
	if len(c.Status.Conditions) != 2 || c.Annotations[AnnNodeExpansionNotRequired] != "true" {
		t.Error("the step changed its argument")
	}
	if MarkControllerResizeInProgress(out, qty("2Mi"), metav1.NewTime(at.Add(time.Hour))) != nil {
		t.Error("marking twice writes again")
	}
}

// A retry of the size already allocated leaves an infeasible mark and its
// error as they are until the driver answers again.
func TestRetryOfTheSameSizeKeepsTheFailure(t *testing.T) {
	c := claim(requesting("2Pi"), allocated("2Pi"), resizeStatus(ctrlInfeasible),
		withCondition(v1.PersistentVolumeClaimControllerResizeError, "failed to expand pvc with x"),
		withCondition(v1.PersistentVolumeClaimResizing, ""))
	if out := MarkControllerResizeInProgress(c, qty("2Pi"), at); out != nil {
		t.Errorf("a retry of the same size writes %+v", out.Status)
	}
	out := MarkControllerResizeInProgress(c, qty("2Mi"), at)
	if out == nil || ResizeStatus(out) != ctrlInProgress || len(out.Status.Conditions) != 1 {
		t.Fatalf("a lowered size did not start afresh: %+v", out)
	}
}

func TestNodeResizePendingKeepsResizingAndAddsTheReferenceMessage(t *testing.T) {
	c := MarkControllerResizeInProgress(claim(requesting("2Mi")), qty("2Mi"), at)
	out := MarkNodeResizePending(c, at)
	if out == nil || ResizeStatus(out) != nodePending {
		t.Fatalf("got %+v", out)
	}
	got := conditionsOf(out)
	if got[v1.PersistentVolumeClaimFileSystemResizePending] != "Waiting for user to (re-)start a pod to finish file system resize of volume on node." {
		t.Errorf("conditions %v", got)
	}
	if _, ok := got[v1.PersistentVolumeClaimResizing]; !ok {
		t.Error("Resizing dropped: the reference keeps it until the node finishes")
	}
	if MarkNodeResizePending(out, at) != nil {
		t.Error("marking twice writes again")
	}
}

func TestResizeFinishedSetsCapacityAndClearsEveryTrace(t *testing.T) {
	c := MarkControllerResizeInProgress(claim(requesting("2Mi"), withCondition("Unused", "")), qty("2Mi"), at)
	out := MarkResizeFinished(c, qty("2Mi"))
	if out == nil {
		t.Fatal("nothing to write")
	}
	s := out.Status
	if s.Capacity.Storage().Cmp(qty("2Mi")) != 0 || s.AllocatedResourceStatuses != nil || s.AllocatedResources.Storage().Cmp(qty("2Mi")) != 0 {
		t.Errorf("status %+v", s)
	}
	if got := conditionsOf(out); len(got) != 1 || got["Unused"] != "" {
		t.Errorf("conditions %v, want only Unused", got)
	}
	if out.Annotations[AnnNodeExpansionNotRequired] != "true" {
		t.Error("no node-expansion-not-required annotation")
	}
	if MarkResizeFinished(out, qty("2Mi")) != nil {
		t.Error("finishing twice writes again")
	}
}

func TestControllerFailureIsInfeasibleOnlyWhenTheDriverSaysSo(t *testing.T) {
	c := MarkControllerResizeInProgress(claim(requesting("2Pi")), qty("2Pi"), at)
	err := grpcstatus.Error(codes.OutOfRange, "too large")
	inf := MarkControllerResizeFailed(c, err, true, at)
	if inf == nil || ResizeStatus(inf) != ctrlInfeasible {
		t.Fatalf("got %+v", inf)
	}
	got := conditionsOf(inf)
	if got[v1.PersistentVolumeClaimControllerResizeError] != "failed to expand pvc with rpc error: code = OutOfRange desc = too large" {
		t.Errorf("conditions %v", got)
	}
	if _, ok := got[v1.PersistentVolumeClaimResizing]; !ok {
		t.Error("Resizing dropped")
	}
	other := MarkControllerResizeFailed(c, errors.New("boom"), false, at)
	if other == nil || ResizeStatus(other) != ctrlInProgress {
		t.Errorf("a final error that is not infeasible changed the status: %+v", other)
	}
	if MarkControllerResizeFailed(inf, err, true, metav1.NewTime(at.Add(time.Minute))) != nil {
		t.Error("the same failure writes again")
	}
}

func TestNodeSteps(t *testing.T) {
	pending := MarkNodeResizePending(MarkControllerResizeInProgress(claim(requesting("2Mi")), qty("2Mi"), at), at)
	inProgress := MarkNodeResizeInProgress(pending)
	if inProgress == nil || ResizeStatus(inProgress) != nodeInProgress || MarkNodeResizeInProgress(inProgress) != nil {
		t.Fatalf("in progress: %+v", inProgress)
	}
	failed := MarkNodeResizeFailed(inProgress, errors.New("no fs"), true, at)
	if failed == nil || ResizeStatus(failed) != nodeInfeasible ||
		conditionsOf(failed)[v1.PersistentVolumeClaimNodeResizeError] != "failed to expand pvc with no fs" {
		t.Fatalf("failed: %+v", failed)
	}
	if soft := MarkNodeResizeFailed(inProgress, errors.New("busy"), false, at); soft == nil || ResizeStatus(soft) != nodeInProgress {
		t.Errorf("a failure that is not infeasible changed the status: %+v", soft)
	}
	done := MarkNodeResizeFinished(inProgress, qty("2Mi"))
	if done == nil || done.Status.AllocatedResourceStatuses != nil || len(done.Status.Conditions) != 0 ||
		done.Status.Capacity.Storage().Cmp(qty("2Mi")) != 0 {
		t.Fatalf("finished: %+v", done)
	}
	if _, ok := done.Annotations[AnnNodeExpansionNotRequired]; ok {
		t.Error("the node's finish set node-expansion-not-required")
	}
	if MarkNodeResizeFinished(done, qty("2Mi")) != nil {
		t.Error("finishing twice writes again")
	}
}

func TestEventTextsAreTheReferences(t *testing.T) {
	if got := MessageResizing("pv1"); got != "External resizer is resizing volume pv1" {
		t.Error(got)
	}
	err := ResizeError("pv1", "d.csi.test", grpcstatus.Error(codes.OutOfRange, "x"))
	if got := err.Error(); got != `resize volume "pv1" by resizer "d.csi.test" failed: rpc error: code = OutOfRange desc = x` {
		t.Error(got)
	}
	if grpcstatus.Code(errors.Unwrap(err)) != codes.OutOfRange {
		t.Error("the driver's error is not wrapped")
	}
	if got := MessageOfflineInUse(claim(), "d.csi.test"); got != "Unable to expand ns/claim1 because CSI driver d.csi.test only supports offline expansion and volume is currently in-use" {
		t.Error(got)
	}
}

func TestAVolumeOnlyGrows(t *testing.T) {
	p := pv(sized("2Mi"))
	if GrowVolume(p, qty("1Mi")) != nil || GrowVolume(p, qty("2Mi")) != nil {
		t.Error("a PV was shrunk or rewritten at its own size")
	}
	out := GrowVolume(p, qty("3Mi"))
	if out == nil || out.Spec.Capacity.Storage().Cmp(qty("3Mi")) != 0 || p.Spec.Capacity.Storage().Cmp(qty("2Mi")) != 0 {
		t.Errorf("grown %v, original %v", out, p.Spec.Capacity)
	}
}
