package attachdetach

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	res, err := l.syncWhole(nodeName)
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

// iscsiVolume is claim ns/data bound to a ReadWriteOnce iscsi PV, and its
// unique name.
func iscsiVolume() (*v1.PersistentVolumeClaim, *v1.PersistentVolume, v1.UniqueVolumeName) {
	claim, pv := boundVolume()
	pv.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{ISCSI: &v1.ISCSIPersistentVolumeSource{
		TargetPortal: "10.0.0.1:3260", IQN: "iqn.2026-11.io.volplane:d", Lun: 0}}
	return claim, pv, v1.UniqueVolumeName("kubernetes.io/iscsi/10.0.0.1:3260:iqn.2026-11.io.volplane:d:0")
}

// reporters are the nodes whose status, as the API server holds it, lists
// the volume attached.
func (l *fakeLoop) reporters(t *testing.T, u v1.UniqueVolumeName) []string {
	t.Helper()
	list, err := l.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range list.Items {
		for _, a := range n.Status.VolumesAttached {
			if a.Name == u {
				out = append(out, n.Name)
			}
		}
	}
	return out
}

// An iscsi volume is attached by being listed in volumesAttached. Node-1's
// sync listed a ReadWriteOnce one; before the informer shows that patch,
// node-2's sync must see it (our own patch) and wait with Multi-Attach.
func TestInTreeSingleNodeVolumeIsNotListedOnASecondNodeBeforeTheInformerCatchesUp(t *testing.T) {
	claim, pv, u := iscsiVolume()
	l := newFakeLoop(t, managedNode("node-1"), managedNode("node-2"), claim, pv,
		podOn("a", "node-1", "data"), podOn("b", "node-2", "data"))
	for _, n := range []string{"node-1", "node-2"} {
		if _, err := l.syncWhole(n); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.reporters(t, u); len(got) != 1 || got[0] != "node-1" {
		t.Fatalf("nodes listing the volume %v, want [node-1]", got)
	}
}

// Two nodes' syncs at once: node-1's status patch is held in flight while
// node-2's sync runs. node-2 must not list the volume too.
func TestInTreeSingleNodeVolumeIsListedOnOneNodeWhenTwoSyncsRunAtOnce(t *testing.T) {
	claim, pv, u := iscsiVolume()
	l := newFakeLoop(t, managedNode("node-1"), managedNode("node-2"), claim, pv,
		podOn("a", "node-1", "data"), podOn("b", "node-2", "data"))
	patching, release := make(chan struct{}), make(chan struct{})
	l.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() == "node-1" {
			close(patching)
			<-release
		}
		return false, nil, nil
	})
	one := make(chan error, 1)
	go func() { _, err := l.syncWhole("node-1"); one <- err }()
	<-patching
	two := make(chan error, 1)
	go func() { _, err := l.syncWhole("node-2"); two <- err }()
	// node-2's sync blocks on the lock node-1's holds. Without that lock it
	// would decide now on facts without node-1's patch and list the volume
	// too (its own patch then waits only on the fake clientset's lock):
	// give it the time a sync takes before letting node-1's patch through.
	select {
	case err := <-two:
		t.Errorf("node-2's sync finished (err %v) while node-1's patch was in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-one; err != nil {
		t.Fatal(err)
	}
	<-two
	if got := l.reporters(t, u); len(got) != 1 || got[0] != "node-1" {
		t.Fatalf("nodes listing the volume %v, want [node-1]", got)
	}
}
