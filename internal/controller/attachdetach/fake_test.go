package attachdetach

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/loop"
)

const (
	drv      = "net.csi.test"
	nodeName = "node-1"
)

// fakeLoop is the loop over the fake clientset with informers never
// started: a test fills the informer stores itself and calls syncNode, so
// it sees exactly which writes one sync makes.
type fakeLoop struct {
	*Controller
	client   *fake.Clientset
	f        informers.SharedInformerFactory
	recorder *record.FakeRecorder
	clock    *testclock.FakeClock
}

func newFakeLoop(t *testing.T, objs ...runtime.Object) *fakeLoop {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(100)
	clk := testclock.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	c, err := New(Config{Client: client, Informers: f, Recorder: rec, Clock: clk, MaxWaitForUnmount: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.q.ShutDown)
	l := &fakeLoop{Controller: c, client: client, f: f, recorder: rec, clock: clk}
	client.PrependReactor("patch", "nodes", l.patchVolumesAttached)
	for _, obj := range objs {
		l.cache(t, obj)
	}
	return l
}

// cache puts an object into its informer's store, as a delivered event would.
func (l *fakeLoop) cache(t *testing.T, obj runtime.Object) {
	t.Helper()
	var err error
	switch o := obj.(type) {
	case *v1.Node:
		err = l.f.Core().V1().Nodes().Informer().GetStore().Add(o)
	case *v1.Pod:
		err = l.f.Core().V1().Pods().Informer().GetStore().Add(o)
	case *v1.PersistentVolumeClaim:
		err = l.f.Core().V1().PersistentVolumeClaims().Informer().GetStore().Add(o)
	case *v1.PersistentVolume:
		err = l.f.Core().V1().PersistentVolumes().Informer().GetStore().Add(o)
	case *storagev1.VolumeAttachment:
		err = l.f.Storage().V1().VolumeAttachments().Informer().GetStore().Add(o)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// patchVolumesAttached plays the API server for the loop's node status
// patch, with what the fake tracker lacks: a new resourceVersion.
func (l *fakeLoop) patchVolumesAttached(a k8stesting.Action) (bool, runtime.Object, error) {
	p := a.(k8stesting.PatchAction)
	var body struct {
		Status struct{ VolumesAttached []v1.AttachedVolume } `json:"status"`
	}
	if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
		return true, nil, err
	}
	obj, err := l.client.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", p.GetName())
	if err != nil {
		return true, nil, err
	}
	n := obj.(*v1.Node).DeepCopy()
	n.Status.VolumesAttached = body.Status.VolumesAttached
	rv, _ := strconv.Atoi(n.ResourceVersion)
	n.ResourceVersion = strconv.Itoa(rv + 1)
	return true, n, l.client.Tracker().Update(v1.SchemeGroupVersion.WithResource("nodes"), n, "")
}

// syncWhole syncs all of the node's volumes, as the resync asks.
func (l *fakeLoop) syncWhole(node string) (loop.Result, error) {
	l.note(node, nil)
	return l.syncNode(context.Background(), node)
}

func (l *fakeLoop) sync(t *testing.T) error {
	t.Helper()
	l.client.ClearActions()
	_, err := l.syncWhole(nodeName)
	return err
}

// writes lists the sync's writes as "verb resource[/subresource]".
func (l *fakeLoop) writes() []string {
	var out []string
	for _, a := range l.client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

func node(inUse ...v1.UniqueVolumeName) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, ResourceVersion: "1",
		Annotations: map[string]string{attachment.ManagedAnnotation: "true"}},
		Status: v1.NodeStatus{VolumesInUse: inUse,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
}

// boundVolume is claim ns/data bound to the CSI volume pv-data.
func boundVolume() (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "claim-uid"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-data"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data"},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "data", UID: claim.UID},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: "h"}}}}
	return claim, pv
}

func podUsing(claim string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "pod-uid"},
		Spec: v1.PodSpec{NodeName: nodeName, Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
}

func attachmentOf(attached bool) *storagev1.VolumeAttachment {
	pv := "pv-data"
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachment.Name("h", drv, nodeName)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: drv, NodeName: nodeName,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		Status: storagev1.VolumeAttachmentStatus{Attached: attached}}
}

var unique = attachment.UniqueVolumeName(drv, "h")

func TestAttachedVolumeIsReportedWithOneStatusPatchAndOneEvent(t *testing.T) {
	claim, pv := boundVolume()
	l := newFakeLoop(t, node(), claim, pv, podUsing("data"), attachmentOf(true))
	if err := l.sync(t); err != nil {
		t.Fatal(err)
	}
	if got := l.writes(); len(got) != 1 || got[0] != "patch nodes/status" {
		t.Fatalf("writes %v, want one node status patch", got)
	}
	patch := l.client.Actions()[0].(k8stesting.PatchAction)
	var body struct {
		Status struct{ VolumesAttached []v1.AttachedVolume } `json:"status"`
	}
	if err := json.Unmarshal(patch.GetPatch(), &body); err != nil || len(body.Status.VolumesAttached) != 1 ||
		body.Status.VolumesAttached[0].Name != unique {
		t.Fatalf("patch %s (%v), want volumesAttached [%s]", patch.GetPatch(), err, unique)
	}
	want := `Normal SuccessfulAttachVolume AttachVolume.Attach succeeded for volume "pv-data" `
	if got := <-l.recorder.Events; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
	// The informer has not shown the patch yet: no second patch, no second event.
	if err := l.sync(t); err != nil || len(l.writes()) != 0 || len(l.recorder.Events) != 0 {
		t.Errorf("second sync: err %v writes %v events %d, want nothing", err, l.writes(), len(l.recorder.Events))
	}
}

// If the volume cannot leave volumesAttached, it is not detached: the
// kubelet could otherwise believe a detached volume attached.
func TestFailedStatusPatchSkipsTheDetach(t *testing.T) {
	n := node()
	n.Status.VolumesAttached = []v1.AttachedVolume{{Name: unique}}
	claim, pv := boundVolume()
	l := newFakeLoop(t, n, claim, pv, attachmentOf(true))
	l.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("api server on fire")
	})
	if err := l.sync(t); err == nil {
		t.Fatal("sync succeeded, want the patch error")
	}
	if got := l.writes(); len(got) != 1 || got[0] != "patch nodes/status" {
		t.Errorf("writes %v, want the failed patch only", got)
	}
}

// The live node decides a normal detach: the cache may not show yet that
// the kubelet started using the volume again.
func TestNormalDetachIsCheckedAgainstTheLiveNode(t *testing.T) {
	claim, pv := boundVolume()
	l := newFakeLoop(t, node(unique), claim, pv, attachmentOf(true))
	l.cache(t, node()) // the cache is behind: it shows the volume unused
	if err := l.sync(t); err == nil || !strings.Contains(err.Error(), "still in use") {
		t.Fatalf("sync error %v, want still in use", err)
	}
	for _, w := range l.writes() {
		if strings.HasPrefix(w, "delete") {
			t.Errorf("writes %v: detached a volume the live node uses", l.writes())
		}
	}
}

// A node deleted between the decision and the detach is decided again,
// from what its delete event says it last used: the cache the decision
// read may not have shown its volume in use yet, and detaching at once
// would skip the unmount wait.
func TestNodeDeletedAfterTheDecisionIsDecidedAgain(t *testing.T) {
	claim, pv := boundVolume()
	l := newFakeLoop(t, node(unique), claim, pv, attachmentOf(true))
	l.cache(t, node()) // the cache is behind: it shows the volume unused
	if err := l.client.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := l.sync(t); err == nil || !strings.Contains(err.Error(), "deciding again") {
		t.Fatalf("sync error %v, want the node's deletion to be decided again", err)
	}
	for _, w := range l.writes() {
		if strings.HasPrefix(w, "delete volumeattachments") {
			t.Errorf("writes %v: detached before the node's last status was known", l.writes())
		}
	}
}

// A create or delete that another sync made already is not an error.
func TestAlreadyExistsAndNotFoundAreSuccess(t *testing.T) {
	claim, pv := boundVolume()
	l := newFakeLoop(t, node(), claim, pv, podUsing("data"))
	l.client.PrependReactor("create", "volumeattachments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "volumeattachments"}, "x")
	})
	if err := l.sync(t); err != nil {
		t.Errorf("create: %v", err)
	}
	l2 := newFakeLoop(t, node(), claim, pv)
	l2.cache(t, attachmentOf(false)) // in the cache only: the API server has none
	if err := l2.sync(t); err != nil {
		t.Errorf("delete: %v", err)
	}
}

// The unmount wait runs on the loop's clock, and the node is looked at
// again when it runs out; a NotReady node then loses the volume.
func TestUnmountWaitRequeuesAndForcesTheDetachOnANotReadyNode(t *testing.T) {
	n := node(unique)
	n.Status.Conditions[0].Status = v1.ConditionFalse
	claim, pv := boundVolume()
	l := newFakeLoop(t, n, claim, pv, attachmentOf(true))
	l.client.ClearActions()
	res, err := l.syncWhole(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter() <= 0 {
		t.Errorf("result %+v: want the node again when the wait runs out", res)
	}
	for _, w := range l.writes() {
		if strings.HasPrefix(w, "delete") {
			t.Fatalf("detached at once: %v", l.writes())
		}
	}
	l.clock.Step(time.Minute + 2*time.Second)
	if err := l.sync(t); err != nil {
		t.Fatal(err)
	}
	if got := l.writes(); len(got) == 0 || got[len(got)-1] != "delete volumeattachments" {
		t.Errorf("writes %v, want the forced detach", got)
	}
}

// Two nodes' syncs run in parallel and neither sees the other's new
// attachment in the cache yet: a single-node volume is still attached to
// one of them only; a multi-node volume to both.
func TestParallelSyncsNeverAttachASingleNodeVolumeTwice(t *testing.T) {
	for _, tc := range []struct {
		modes []v1.PersistentVolumeAccessMode
		want  int
	}{{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, 1}, {[]v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, 2}} {
		claim, pv := boundVolume()
		pv.Spec.AccessModes = tc.modes
		l := newFakeLoop(t, claim, pv)
		for _, n := range []string{"node-1", "node-2"} {
			va := attachmentOf(false)
			va.Name, va.Spec.NodeName = attachment.Name("h", drv, n), n
			a := attachment.Attach{Attachment: va, Volume: unique, SingleNode: !attachment.MultiAttachAllowed(pv)}
			_ = l.attach(context.Background(), attachment.Plan{Create: []attachment.Attach{a}})
		}
		list, _ := l.client.StorageV1().VolumeAttachments().List(context.Background(), metav1.ListOptions{})
		if len(list.Items) != tc.want {
			t.Errorf("%v: %d attachments, want %d", tc.modes, len(list.Items), tc.want)
		}
	}
}

// A node whose volumes keep attaching is reported less and less often, one
// patch carrying all that attached meanwhile, down to every four
// intervals: the loop keeps each node's pace from sync to sync.
func TestBusyNodesPatchesAreSpacedOut(t *testing.T) {
	l := newFakeLoop(t, node())
	attachNew := func(name string) {
		claim, pv := boundVolume()
		claim.Name, claim.UID, claim.Spec.VolumeName = name, types.UID(name), "pv-"+name
		pv.Name, pv.Spec.ClaimRef.Name, pv.Spec.ClaimRef.UID, pv.Spec.CSI.VolumeHandle = "pv-"+name, name, claim.UID, name
		pod := podUsing(name)
		pod.Name, pod.UID = name, types.UID("pod-"+name)
		va := attachmentOf(true)
		va.Name, va.Spec.Source.PersistentVolumeName = attachment.Name(name, drv, nodeName), &pv.Name
		for _, o := range []runtime.Object{claim, pv, pod, va} {
			l.cache(t, o)
		}
	}
	step := func(what string, d time.Duration, wantPatch bool, wantAfter time.Duration) {
		t.Helper()
		l.clock.Step(d)
		l.client.ClearActions()
		res, err := l.syncWhole(nodeName)
		if err != nil {
			t.Fatal(err)
		}
		if patched := len(l.writes()) == 1 && l.writes()[0] == "patch nodes/status"; patched != wantPatch || res.RequeueAfter() != wantAfter {
			t.Errorf("%s: writes %v, again after %v; want a patch %v, again after %v", what, l.writes(), res.RequeueAfter(), wantPatch, wantAfter)
		}
	}
	const base = attachment.DefaultStatusInterval
	attachNew("a")
	step("the first attach", 0, true, 0)
	attachNew("b")
	step("an attach 100ms later", 100*time.Millisecond, false, base-100*time.Millisecond)
	step("when the interval is over", base-100*time.Millisecond, true, 0)
	attachNew("c")
	step("the next attach, 100ms later", 100*time.Millisecond, false, 2*base-100*time.Millisecond)
	step("when the doubled interval is over", 2*base-100*time.Millisecond, true, 0)
	attachNew("d")
	step("the next", 100*time.Millisecond, false, 4*base-100*time.Millisecond)
	step("when the longest interval is over", 4*base-100*time.Millisecond, true, 0)
	attachNew("e")
	step("an attach after a quiet while", time.Minute, true, 0)
	attachNew("f")
	step("and one 100ms later", 100*time.Millisecond, false, base-100*time.Millisecond)
}
