package attachdetach

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	k8stesting "k8s.io/client-go/testing"
)

// An iscsi volume no pod wants, that a NotReady node still reports in
// use, leaves volumesAttached once the unmount wait runs out: one status
// patch, no attachment deleted (it never had one), counted as a forced
// detach.
func TestInTreeVolumeIsDetachedByOneStatusPatchCountedAsForced(t *testing.T) {
	u := v1.UniqueVolumeName("kubernetes.io/iscsi/10.0.0.1:3260:iqn.2026-11.io.volplane:d:0")
	n := node(u)
	n.Status.Conditions[0].Status = v1.ConditionFalse
	n.Status.VolumesAttached = []v1.AttachedVolume{{Name: u}}
	l := newFakeLoop(t, n)
	l.client.ClearActions()
	res, err := l.syncNode(context.Background(), nodeName)
	if err != nil || len(l.writes()) != 0 || res.RequeueAfter() <= 0 {
		t.Fatalf("in use: err %v writes %v result %+v, want a wait and a requeue", err, l.writes(), res)
	}
	l.clock.Step(time.Minute + 2*time.Second)
	if err := l.sync(t); err != nil {
		t.Fatal(err)
	}
	if got := l.writes(); len(got) != 1 || got[0] != "patch nodes/status" {
		t.Fatalf("writes %v, want one node status patch", got)
	}
	var body struct {
		Status struct{ VolumesAttached []v1.AttachedVolume } `json:"status"`
	}
	patch := l.client.Actions()[0].(k8stesting.PatchAction)
	if err := json.Unmarshal(patch.GetPatch(), &body); err != nil || len(body.Status.VolumesAttached) != 0 {
		t.Errorf("patch %s (%v), want volumesAttached []", patch.GetPatch(), err)
	}
	if got := testutil.ToFloat64(l.metrics.forcedDetaches.WithLabelValues("timeout")); got != 1 {
		t.Errorf("forced detaches (timeout) = %v, want 1", got)
	}
}
