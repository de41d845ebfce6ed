package resizer

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/expansion"
)

// Edge cases against the fake clientset, with the bundled driver served in
// the test (test/e2e/expansion runs the real API server).

type bed struct {
	c      *Controller
	client *fake.Clientset
	events *record.FakeRecorder
	drv    *driver
	clock  *testingclock.FakePassiveClock
}

func newBed(t *testing.T, d *driver, objs ...runtime.Object) *bed {
	t.Helper()
	b := &bed{client: fake.NewClientset(objs...), events: record.NewFakeRecorder(100), drv: d,
		clock: testingclock.NewFakePassiveClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))}
	factory := informers.NewSharedInformerFactory(b.client, 0)
	c, err := New(Config{Client: b.client, Informers: factory, Pool: csi.NewPool(d.ep),
		Recorder: func(string) record.EventRecorder { return b.events },
		Clock:    b.clock})
	if err != nil {
		t.Fatal(err)
	}
	b.c = c
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	b.client.ClearActions()
	return b
}

// sync syncs the test's claim once.
func (b *bed) sync() error {
	_, err := b.c.syncClaim(context.Background(), "ns/claim1")
	return err
}

func qty(s string) resource.Quantity { return resource.MustParse(s) }

// testClaim is ns/claim1 Bound to pv1 at 1Mi, requesting size.
func testClaim(size string, mods ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim1", UID: "u1", ResourceVersion: "1"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv1", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: qty(size)}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, Capacity: v1.ResourceList{v1.ResourceStorage: qty("1Mi")}},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func testPV(handle string, mods ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", ResourceVersion: "1"}, Spec: v1.PersistentVolumeSpec{
		Capacity:    v1.ResourceList{v1.ResourceStorage: qty("1Mi")},
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		ClaimRef:    &v1.ObjectReference{Namespace: "ns", Name: "claim1", UID: "u1"},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
			Driver: drv, VolumeHandle: handle, FSType: "ext4"}},
	}}
	for _, m := range mods {
		m(p)
	}
	return p
}

func writes(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
	}
	return out
}

func (b *bed) claim(t *testing.T) *v1.PersistentVolumeClaim {
	t.Helper()
	c, err := b.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "claim1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (b *bed) pvCapacity(t *testing.T) string {
	t.Helper()
	p, err := b.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Spec.Capacity.Storage().String()
}

// drained is every event recorded so far.
func (b *bed) drained() []string {
	var out []string
	for {
		select {
		case e := <-b.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasCondition(c *v1.PersistentVolumeClaim, typ v1.PersistentVolumeClaimConditionType) (string, bool) {
	for _, cond := range c.Status.Conditions {
		if cond.Type == typ {
			return cond.Message, true
		}
	}
	return "", false
}

func TestControllerOnlyExpansionIsThreeWrites(t *testing.T) {
	d := startDriver(t, false)
	handle := d.createVolume(t, "v1")
	b := newBed(t, d, testClaim("2Mi"), testPV(handle))
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	want := []string{"patch persistentvolumeclaims/status", "patch persistentvolumes/", "patch persistentvolumeclaims/status"}
	if got := writes(b.client); !slices.Equal(got, want) {
		t.Fatalf("writes %v, want %v", got, want)
	}
	c := b.claim(t)
	if c.Status.Capacity.Storage().Cmp(qty("2Mi")) != 0 || c.Status.AllocatedResources.Storage().Cmp(qty("2Mi")) != 0 ||
		c.Status.AllocatedResourceStatuses != nil || len(c.Status.Conditions) != 0 ||
		c.Annotations[expansion.AnnNodeExpansionNotRequired] != "true" {
		t.Errorf("claim %+v %v", c.Status, c.Annotations)
	}
	if got := b.pvCapacity(t); got != "2Mi" {
		t.Errorf("PV capacity %s", got)
	}
	req := d.last("ControllerExpandVolume").(*csipb.ControllerExpandVolumeRequest)
	// RWO is SINGLE_NODE_MULTI_WRITER: the driver has that capability.
	if req.GetCapacityRange().GetRequiredBytes() != 2<<20 || req.GetVolumeId() != handle ||
		req.GetVolumeCapability().GetMount().GetFsType() != "ext4" ||
		req.GetVolumeCapability().GetAccessMode().GetMode() != csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER {
		t.Errorf("request %v", req)
	}
	wantEvents := []string{"Normal Resizing External resizer is resizing volume pv1", "Normal VolumeResizeSuccessful Resize volume succeeded"}
	if got := b.drained(); !slices.Equal(got, wantEvents) {
		t.Errorf("events %q, want %q", got, wantEvents)
	}
}

func TestNodeOnlyDriverGoesToNodePendingWithoutACall(t *testing.T) {
	d := startDriver(t, true)
	b := newBed(t, d, testClaim("2Mi"), testPV("h1"))
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	if n := d.count("ControllerExpandVolume"); n != 0 {
		t.Errorf("%d ControllerExpandVolume calls to a driver without controller expansion", n)
	}
	c := b.claim(t)
	msg, pending := hasCondition(c, v1.PersistentVolumeClaimFileSystemResizePending)
	if expansion.ResizeStatus(c) != v1.PersistentVolumeClaimNodeResizePending || !pending || msg != expansion.MessageNodeResizePending ||
		c.Status.Capacity.Storage().Cmp(qty("1Mi")) != 0 {
		t.Errorf("claim %+v", c.Status)
	}
	if got := b.pvCapacity(t); got != "2Mi" {
		t.Errorf("PV capacity %s", got)
	}
	events := b.drained()
	if !slices.Contains(events, "Normal FileSystemResizeRequired Require file system resize of volume on node") {
		t.Errorf("events %q", events)
	}
}

func TestInfeasibleSizeWaitsForItsSlowRetryButALoweredRequestDoesNot(t *testing.T) {
	d := startDriver(t, false)
	handle := d.createVolume(t, "v1")
	d.setAnswer(func(method string, req any) (any, error) {
		if r, ok := req.(*csipb.ControllerExpandVolumeRequest); ok && r.GetCapacityRange().GetRequiredBytes() > 1<<30 {
			return nil, status.Error(codes.OutOfRange, "larger than the whole driver")
		}
		return nil, nil
	})
	b := newBed(t, d, testClaim("2Pi"), testPV(handle))
	res, err := b.c.syncClaim(context.Background(), "ns/claim1")
	if err != nil {
		t.Fatalf("an infeasible size is a slow retry, not a failure to back off on: %v", err)
	}
	if res.RequeueAfter() != resizing.DefaultRetryMax {
		t.Errorf("result %+v, want the slow retry of %s", res, resizing.DefaultRetryMax)
	}
	c := b.claim(t)
	msg, _ := hasCondition(c, v1.PersistentVolumeClaimControllerResizeError)
	if expansion.ResizeStatus(c) != v1.PersistentVolumeClaimControllerResizeInfeasible ||
		msg != "failed to expand pvc with rpc error: code = OutOfRange desc = larger than the whole driver" {
		t.Errorf("claim %+v", c.Status)
	}
	events := b.drained()
	wantFailed := `Warning VolumeResizeFailed resize volume "pv1" by resizer "hostpath.csi.volplane.io" failed: rpc error: code = OutOfRange desc = larger than the whole driver`
	if !slices.Contains(events, wantFailed) {
		t.Errorf("events %q", events)
	}

	// Synced again before the slow retry is due: no call, no write.
	b.client.ClearActions()
	waitCached(t, b, func(c *v1.PersistentVolumeClaim) bool {
		return expansion.ResizeStatus(c) == v1.PersistentVolumeClaimControllerResizeInfeasible
	})
	res, err = b.c.syncClaim(context.Background(), "ns/claim1")
	if err != nil || d.count("ControllerExpandVolume") != 1 || len(writes(b.client)) != 0 {
		t.Fatalf("early retry: %v, %d calls, writes %v", err, d.count("ControllerExpandVolume"), writes(b.client))
	}
	if left := res.RequeueAfter(); left <= 0 || left > resizing.DefaultRetryMax {
		t.Errorf("early retry: result %+v, want what is left of the slow retry", res)
	}
	// Once it is due, the same size is asked for once more.
	b.clock.SetTime(b.clock.Now().Add(resizing.DefaultRetryMax + time.Second))
	if err := b.sync(); err != nil || d.count("ControllerExpandVolume") != 2 {
		t.Fatalf("due retry: %v, %d calls", err, d.count("ControllerExpandVolume"))
	}

	// The user lowers the request: expanded at once, the failure cleared.
	lowered := b.claim(t)
	lowered.Spec.Resources.Requests[v1.ResourceStorage] = qty("2Mi")
	if _, err := b.client.CoreV1().PersistentVolumeClaims("ns").Update(context.Background(), lowered, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCached(t, b, func(c *v1.PersistentVolumeClaim) bool {
		return c.Spec.Resources.Requests.Storage().Cmp(qty("2Mi")) == 0
	})
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	c = b.claim(t)
	if c.Status.Capacity.Storage().Cmp(qty("2Mi")) != 0 || c.Status.AllocatedResourceStatuses != nil || len(c.Status.Conditions) != 0 {
		t.Errorf("after lowering: %+v", c.Status)
	}
}

// waitCached waits until the informer holds a claim that passes ok.
func waitCached(t *testing.T, b *bed, ok func(*v1.PersistentVolumeClaim) bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if c, err := b.c.Claims.PersistentVolumeClaims("ns").Get("claim1"); err == nil && ok(c) {
			return
		}
	}
	t.Fatal("the cache never saw the change")
}

func TestTransientErrorLeavesTheClaimInProgress(t *testing.T) {
	d := startDriver(t, false)
	handle := d.createVolume(t, "v1")
	d.setAnswer(func(method string, _ any) (any, error) {
		if method == "ControllerExpandVolume" {
			return nil, status.Error(codes.ResourceExhausted, "busy")
		}
		return nil, nil
	})
	b := newBed(t, d, testClaim("2Mi"), testPV(handle))
	err := b.sync()
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("sync: %v, want the driver's error to back off on", err)
	}
	c := b.claim(t)
	if _, failed := hasCondition(c, v1.PersistentVolumeClaimControllerResizeError); failed ||
		expansion.ResizeStatus(c) != v1.PersistentVolumeClaimControllerResizeInProgress {
		t.Errorf("claim %+v", c.Status)
	}
	if b.c.Memory.Ended("ns/claim1") {
		t.Error("ResourceExhausted counted as final (the reference retries it as in progress)")
	}
}

// A resizer that stopped after growing the PV finds the claim in progress
// with the PV grown: it asks the driver again (idempotent), leaves the PV
// alone, and finishes the claim: one write.
func TestCrashAfterThePVWriteIsFinishedWithOneWrite(t *testing.T) {
	d := startDriver(t, false)
	handle := d.createVolume(t, "v1")
	if _, _, err := d.ep.ControllerExpandVolume(context.Background(), &csipb.ControllerExpandVolumeRequest{
		VolumeId: handle, CapacityRange: &csipb.CapacityRange{RequiredBytes: 2 << 20}}); err != nil {
		t.Fatal(err)
	}
	inProgress := func(c *v1.PersistentVolumeClaim) {
		c.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: qty("2Mi")}
		c.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{
			v1.ResourceStorage: v1.PersistentVolumeClaimControllerResizeInProgress}
		c.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimResizing, Status: v1.ConditionTrue}}
	}
	grown := func(p *v1.PersistentVolume) { p.Spec.Capacity[v1.ResourceStorage] = qty("2Mi") }
	b := newBed(t, d, testClaim("2Mi", inProgress), testPV(handle, grown))
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	if got := writes(b.client); !slices.Equal(got, []string{"patch persistentvolumeclaims/status"}) {
		t.Errorf("writes %v", got)
	}
	if c := b.claim(t); c.Status.Capacity.Storage().Cmp(qty("2Mi")) != 0 || c.Status.AllocatedResourceStatuses != nil {
		t.Errorf("claim %+v", c.Status)
	}
}

func TestExpandSecretsAreSent(t *testing.T) {
	d := startDriver(t, false)
	handle := d.createVolume(t, "v1")
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sec", Name: "expand"}, Data: map[string][]byte{"key": []byte("value")}}
	withRef := func(p *v1.PersistentVolume) {
		p.Spec.CSI.ControllerExpandSecretRef = &v1.SecretReference{Namespace: "sec", Name: "expand"}
	}
	b := newBed(t, d, testClaim("2Mi"), testPV(handle, withRef), secret)
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	req := d.last("ControllerExpandVolume").(*csipb.ControllerExpandVolumeRequest)
	if req.GetSecrets()["key"] != "value" {
		t.Errorf("secrets %v", req.GetSecrets())
	}
}

func TestClaimsOfOtherDriversOrAtRestAreLeftAlone(t *testing.T) {
	d := startDriver(t, false)
	other := func(p *v1.PersistentVolume) { p.Spec.CSI.Driver = "other.csi.test" }
	b := newBed(t, d, testClaim("2Mi"), testPV("h1", other))
	if err := b.sync(); err != nil || len(writes(b.client)) != 0 {
		t.Errorf("another driver's volume: %v, writes %v", err, writes(b.client))
	}
	b = newBed(t, d, testClaim("1Mi"), testPV("h1"))
	if err := b.sync(); err != nil || len(writes(b.client)) != 0 {
		t.Errorf("a claim at rest: %v, writes %v", err, writes(b.client))
	}
	if d.count("ControllerExpandVolume") != 0 {
		t.Error("the driver was called")
	}
}

// Our own status writes do not queue the claim again; a user's edit does.
func TestOwnWritesDoNotRequeue(t *testing.T) {
	d := startDriver(t, false)
	b := newBed(t, d)
	c := testClaim("2Mi")
	b.c.NewestClaim.Wrote("ns/claim1", c)
	onUpdate := b.c.ClaimHandler(expansion.NeedsResize).OnUpdate
	onUpdate(c, c)
	if b.c.Queue.Len() != 0 {
		t.Error("our own write queued the claim")
	}
	edited := c.DeepCopy()
	edited.ResourceVersion = "2"
	onUpdate(c, edited)
	if b.c.Queue.Len() != 1 {
		t.Error("a user's edit did not queue the claim")
	}
}

// A driver that expands only offline refuses a volume in use
// (FailedPrecondition): the claim is not asked for again while a pod uses
// it, and is once the pod is gone.
func TestOfflineDriverWaitsUntilNoPodUsesTheClaim(t *testing.T) {
	d := startDriver(t, false)
	handle := d.createVolume(t, "v1")
	d.setAnswer(func(method string, _ any) (any, error) {
		if method == "ControllerExpandVolume" {
			return nil, status.Error(codes.FailedPrecondition, "volume is published")
		}
		return nil, nil
	})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "p1"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim1"}}}}}}
	b := newBed(t, d, testClaim("2Mi"), testPV(handle), pod)
	if err := b.sync(); err == nil {
		t.Fatal("a refused expansion is not retried")
	}
	if msg, ok := hasCondition(b.claim(t), v1.PersistentVolumeClaimControllerResizeError); !ok || !strings.Contains(msg, "FailedPrecondition") {
		t.Errorf("condition %q", msg)
	}
	b.drained()
	if err := b.sync(); err == nil || d.count("ControllerExpandVolume") != 1 {
		t.Fatalf("retry while in use: %v, %d calls", err, d.count("ControllerExpandVolume"))
	}
	want := "Warning VolumeResizeFailed Unable to expand ns/claim1 because CSI driver hostpath.csi.volplane.io only supports offline expansion and volume is currently in-use"
	if got := b.drained(); !slices.Contains(got, want) {
		t.Errorf("events %q", got)
	}

	d.setAnswer(nil)
	for b.c.Queue.Len() > 0 { // the claim's add event
		key, _ := b.c.Queue.Get()
		b.c.Queue.Done(key)
	}
	if err := b.client.CoreV1().Pods("ns").Delete(context.Background(), "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); b.c.Queue.Len() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the pod's end did not wake the claim")
		}
	}
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	if c := b.claim(t); c.Status.Capacity.Storage().Cmp(qty("2Mi")) != 0 {
		t.Errorf("claim %+v", c.Status)
	}
}

// A request beyond int64 (which Quantity.Value wraps: 2^64 + 1Gi is 1Gi)
// is refused as infeasible without asking the driver, with one event, and
// a sync again writes and records nothing.
func TestRequestBeyondInt64IsInfeasibleOnceWithoutACall(t *testing.T) {
	d := startDriver(t, false)
	handle := d.createVolume(t, "v1")
	b := newBed(t, d, testClaim("18446744074783293440"), testPV(handle))
	for i := range 3 {
		if err := b.sync(); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if i == 0 {
			waitCached(t, b, func(c *v1.PersistentVolumeClaim) bool {
				return expansion.ResizeStatus(c) == v1.PersistentVolumeClaimControllerResizeInfeasible
			})
		}
	}
	if n := d.count("ControllerExpandVolume"); n != 0 {
		t.Errorf("%d ControllerExpandVolume calls for a size no request can carry", n)
	}
	if got := b.pvCapacity(t); got != "1Mi" {
		t.Errorf("PV capacity %s, want 1Mi", got)
	}
	c := b.claim(t)
	if s := expansion.ResizeStatus(c); s != v1.PersistentVolumeClaimControllerResizeInfeasible {
		t.Errorf("resize status %q, want %q", s, v1.PersistentVolumeClaimControllerResizeInfeasible)
	}
	if msg, ok := hasCondition(c, v1.PersistentVolumeClaimControllerResizeError); !ok || !strings.Contains(msg, "18446744074783293440") {
		t.Errorf("ControllerResizeError condition %q (%v), want it to name the size", msg, ok)
	}
	if _, ok := c.Status.AllocatedResources[v1.ResourceStorage]; ok {
		t.Errorf("allocatedResources %v: a size never asked for is not allocated", c.Status.AllocatedResources)
	}
	if got := b.drained(); len(got) != 1 || !strings.HasPrefix(got[0], "Warning VolumeResizeFailed") {
		t.Errorf("events %q, want one VolumeResizeFailed", got)
	}
	if got := writes(b.client); len(got) != 1 {
		t.Errorf("writes %v, want one claim status write", got)
	}
}

// A driver that answers with less than it was asked for has not expanded
// the volume: the claim is not marked finished at a size below its
// request (which would start the expansion again at once, in a loop); the
// sync fails and is retried with backoff.
func TestDriverAnsweringLessThanAskedIsRetriedWithBackoff(t *testing.T) {
	d := startDriver(t, false)
	handle := d.createVolume(t, "v1")
	d.setAnswer(func(method string, req any) (any, error) {
		if _, ok := req.(*csipb.ControllerExpandVolumeRequest); ok {
			return &csipb.ControllerExpandVolumeResponse{CapacityBytes: 1 << 20}, nil
		}
		return nil, nil
	})
	b := newBed(t, d, testClaim("2Mi"), testPV(handle))
	if err := b.sync(); err == nil {
		t.Fatal("sync succeeded, want an error to back off on")
	}
	if got := b.pvCapacity(t); got != "1Mi" {
		t.Errorf("PV capacity %s, want 1Mi", got)
	}
	if s := expansion.ResizeStatus(b.claim(t)); s != v1.PersistentVolumeClaimControllerResizeInProgress {
		t.Errorf("resize status %q, want still in progress", s)
	}
}
