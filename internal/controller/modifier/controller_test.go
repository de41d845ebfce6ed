package modifier

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/modification"
)

// Edge cases against the fake clientset, with the bundled driver served in
// the test (test/e2e/modification runs the real API server).

type bed struct {
	t       *testing.T
	c       *Controller
	factory informers.SharedInformerFactory
	client  *fake.Clientset
	events  *record.FakeRecorder
	clock   *testingclock.FakePassiveClock
	seen    []string
}

func newBed(t *testing.T, pool *csi.Pool, objs ...runtime.Object) *bed {
	t.Helper()
	b := &bed{t: t, client: fake.NewClientset(objs...), events: record.NewFakeRecorder(100),
		clock: testingclock.NewFakePassiveClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))}
	b.factory = informers.NewSharedInformerFactory(b.client, 0)
	c, err := New(Config{Client: b.client, Informers: b.factory, Pool: pool,
		Recorder: func(string) record.EventRecorder { return b.events },
		Clock:    b.clock})
	if err != nil {
		t.Fatal(err)
	}
	b.c = c
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b.factory.Start(ctx.Done())
	b.factory.WaitForCacheSync(ctx.Done())
	b.client.ClearActions()
	return b
}

const drv = hostpath.DriverName

func attributesClass(name string, params map[string]string) *storagev1.VolumeAttributesClass {
	return &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: drv, Parameters: params}
}

var (
	standard = attributesClass("standard", map[string]string{hostpath.ParamTier: hostpath.TierStandard})
	fast     = attributesClass("fast", map[string]string{hostpath.ParamTier: hostpath.TierPremium, hostpath.ParamIOPS: "3000"})
	gold     = attributesClass("gold", map[string]string{hostpath.ParamTier: "gold"}) // the driver refuses it
)

// testClaim is ns/claim1 Bound to pv1 with current class standard,
// asking for class wanted.
func testClaim(wanted string, mods ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim1", UID: "u1", ResourceVersion: "1"},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pv1", VolumeAttributesClassName: ptr.To(wanted)},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, CurrentVolumeAttributesClassName: ptr.To("standard")},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func testPV(handle string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", ResourceVersion: "1"}, Spec: v1.PersistentVolumeSpec{
		VolumeAttributesClassName: ptr.To("standard"),
		ClaimRef:                  &v1.ObjectReference{Namespace: "ns", Name: "claim1", UID: "u1"},
		PersistentVolumeSource:    v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: handle}},
	}}
}

// sync runs one sync of the claim once the informers hold what the fake
// API holds (the fake sets no resourceVersions, so the loop cannot tell
// its own newer copies from the informer's).
func (b *bed) sync() error {
	b.t.Helper()
	_, err := b.syncResult()
	return err
}

// syncResult is sync with what the sync asked of the runner.
func (b *bed) syncResult() (loop.Result, error) {
	b.t.Helper()
	b.eventually("the informers catch up", func() string {
		c, err := b.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "claim1", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		cached, err := b.c.Claims.PersistentVolumeClaims("ns").Get("claim1")
		if err != nil || !apiequality.Semantic.DeepEqual(c, cached) {
			return "claim differs"
		}
		pv, err := b.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv1", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if cachedPV, err := b.c.PVs.Get("pv1"); err != nil || !apiequality.Semantic.DeepEqual(pv, cachedPV) {
			return "PV differs"
		}
		return ""
	})
	return b.c.syncClaim(context.Background(), "ns/claim1")
}

// writes are the API writes since the last ClearActions.
func (b *bed) writes() []string {
	var out []string
	for _, a := range b.client.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			out = append(out, v+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
	}
	return out
}

func (b *bed) claim() *v1.PersistentVolumeClaim {
	b.t.Helper()
	c, err := b.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "claim1", metav1.GetOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	return c
}

func (b *bed) pvClass() string {
	b.t.Helper()
	pv, err := b.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv1", metav1.GetOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	return ptr.Deref(pv.Spec.VolumeAttributesClassName, "")
}

// drained is every event recorded since the last call.
func (b *bed) drained() []string {
	var out []string
	for {
		select {
		case e := <-b.events.Events:
			out = append(out, e)
		default:
			b.seen = append(b.seen, out...)
			return out
		}
	}
}

// eventually waits for cond ("" when true) while the loop runs.
func (b *bed) eventually(what string, cond func() string) {
	b.t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		wrong := cond()
		if wrong == "" {
			return
		}
		if time.Now().After(end) {
			b.t.Fatalf("%s: %s", what, wrong)
		}
	}
}

func condition(c *v1.PersistentVolumeClaim, t v1.PersistentVolumeClaimConditionType) *v1.PersistentVolumeClaimCondition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == t {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

// A modification is three writes (claim status, PV, claim status), the
// driver gets the class's parameters, and the events say so.
func TestModifyIsThreeWritesAndTwoEvents(t *testing.T) {
	d := serveDriver(t)
	handle := d.createVolume(t, "v1", standard.Parameters)
	b := newBed(t, csi.NewPool(d.ep), testClaim("fast"), testPV(handle), standard, fast)
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	want := []string{"patch persistentvolumeclaims/status", "patch persistentvolumes/", "patch persistentvolumeclaims/status"}
	if got := b.writes(); !slices.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	c := b.claim()
	if c.Status.ModifyVolumeStatus != nil || ptr.Deref(c.Status.CurrentVolumeAttributesClassName, "") != "fast" || len(c.Status.Conditions) != 0 {
		t.Errorf("claim status %+v", c.Status)
	}
	if got := b.pvClass(); got != "fast" {
		t.Errorf("PV class %q", got)
	}
	if d.last.GetVolumeId() != handle || !maps.Equal(d.last.GetMutableParameters(), fast.Parameters) {
		t.Errorf("request %v", d.last)
	}
	wantEvents := []string{"Normal VolumeModify external resizer is modifying volume claim1 with vac fast",
		"Normal VolumeModifySuccessful external resizer modified volume claim1 with vac fast successfully"}
	if got := b.drained(); !slices.Equal(got, wantEvents) {
		t.Errorf("events %q, want %q", got, wantEvents)
	}
	b.client.ClearActions()
	if err := b.sync(); err != nil || len(b.writes()) != 0 {
		t.Errorf("a second sync: %v, writes %v", err, b.writes())
	}
}

// A class that does not exist: Pending, one event; its creation wakes the
// claim, which is then modified.
func TestMissingClassIsPendingUntilCreated(t *testing.T) {
	d := serveDriver(t)
	handle := d.createVolume(t, "v1", standard.Parameters)
	b := newBed(t, csi.NewPool(d.ep), testClaim("fast"), testPV(handle), standard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	b.eventually("claim Pending", func() string {
		if st := b.claim().Status.ModifyVolumeStatus; st == nil || st.Status != v1.PersistentVolumeClaimModifyVolumePending {
			return "status " + describe(st)
		}
		return ""
	})
	b.eventually("event", func() string {
		if b.drained(); !slices.Contains(b.seen, `Warning VolumeModifyFailed VAC "fast" does not exist.`) {
			return strings.Join(b.seen, "; ")
		}
		return ""
	})
	if n := d.calls(); n != 0 {
		t.Errorf("%d ControllerModifyVolume calls without a class", n)
	}
	if _, err := b.client.StorageV1().VolumeAttributesClasses().Create(ctx, fast, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.eventually("modified once the class exists", func() string {
		c := b.claim()
		if c.Status.ModifyVolumeStatus != nil || ptr.Deref(c.Status.CurrentVolumeAttributesClassName, "") != "fast" || b.pvClass() != "fast" {
			return "claim status " + describe(c.Status.ModifyVolumeStatus)
		}
		return ""
	})
	// How often it was reported is checked on the real API server
	// (test/e2e/modification): the fake sets no resourceVersions, so a
	// sync racing the informer cannot tell the loop's own write is newer.
}

func describe(st *v1.ModifyVolumeStatus) string {
	if st == nil {
		return "none"
	}
	return string(st.Status) + " to " + st.TargetVolumeAttributesClassName
}

// Parameters the driver refuses: Infeasible with the driver's answer; no
// call until the slow retry is over, unless the user picks another class.
func TestRefusedParametersAreInfeasibleAndRetriedSlowly(t *testing.T) {
	d := serveDriver(t)
	handle := d.createVolume(t, "v1", standard.Parameters)
	b := newBed(t, csi.NewPool(d.ep), testClaim("gold"), testPV(handle), standard, fast, gold)
	err := b.sync()
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("sync: %v, want the driver's InvalidArgument", err)
	}
	c := b.claim()
	st := c.Status.ModifyVolumeStatus
	e := condition(c, v1.PersistentVolumeClaimVolumeModifyVolumeError)
	m := condition(c, v1.PersistentVolumeClaimVolumeModifyingVolume)
	switch {
	case st == nil || st.Status != v1.PersistentVolumeClaimModifyVolumeInfeasible || st.TargetVolumeAttributesClassName != "gold":
		t.Errorf("status %s", describe(st))
	case e == nil || e.Reason != "InvalidArgument" || !strings.Contains(e.Message, `mutable parameter "tier": value "gold"`):
		t.Errorf("ModifyVolumeError %+v", e)
	case m == nil || m.Message != `Modifying volume to "gold" failed. Waiting for retry.`:
		t.Errorf("ModifyingVolume %+v", m)
	}
	if events := b.drained(); len(events) != 2 || !strings.HasPrefix(events[1], "Warning VolumeModifyFailed rpc error: code = InvalidArgument") {
		t.Errorf("events %q", events)
	}
	if res, err := b.syncResult(); err != nil || d.calls() != 1 || res.RequeueAfter() != resizing.DefaultRetryMax {
		t.Errorf("a sync within the slow retry: %v, %d calls (want none more), again after %s", err, d.calls(), res.RequeueAfter())
	}
	b.clock.SetTime(b.clock.Now().Add(resizing.DefaultRetryMax))
	if err := b.sync(); status.Code(err) != codes.InvalidArgument || d.calls() != 2 {
		t.Errorf("after the slow retry: %v, %d calls, want a second call", err, d.calls())
	}
	// The user picks a class the driver accepts: no waiting.
	c = b.claim()
	c.Spec.VolumeAttributesClassName = ptr.To("fast")
	if _, err := b.client.CoreV1().PersistentVolumeClaims("ns").Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.eventually("informer sees the new class", func() string {
		if got, _ := b.c.Claims.PersistentVolumeClaims("ns").Get("claim1"); modification.SpecClass(got) != "fast" {
			return "not yet"
		}
		return ""
	})
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	if c := b.claim(); c.Status.ModifyVolumeStatus != nil || ptr.Deref(c.Status.CurrentVolumeAttributesClassName, "") != "fast" || len(c.Status.Conditions) != 0 {
		t.Errorf("claim status %+v", c.Status)
	}
}

// An answer after which the driver may still be working keeps the claim
// InProgress and resumes the same target even once the spec changed.
func TestUncertainAnswerResumesTheSameTarget(t *testing.T) {
	d := serveDriver(t)
	handle := d.createVolume(t, "v1", standard.Parameters)
	d.setAnswer(func(*csipb.ControllerModifyVolumeRequest) error { return status.Error(codes.Unavailable, "busy") })
	b := newBed(t, csi.NewPool(d.ep), testClaim("fast"), testPV(handle), standard, fast)
	if err := b.sync(); status.Code(err) != codes.Unavailable {
		t.Fatalf("sync: %v", err)
	}
	c := b.claim()
	if st := c.Status.ModifyVolumeStatus; st == nil || st.Status != v1.PersistentVolumeClaimModifyVolumeInProgress {
		t.Errorf("status %s", describe(st))
	}
	if m := condition(c, v1.PersistentVolumeClaimVolumeModifyingVolume); m == nil || m.Message != `Modifying volume to "fast" is still in progress.` {
		t.Errorf("ModifyingVolume %+v", m)
	}
	if events := b.drained(); !slices.Contains(events, "Warning VolumeModifyFailed rpc error: code = Unavailable desc = busy. Still modifying to VAC fast") {
		t.Errorf("events %q", events)
	}
	c.Spec.VolumeAttributesClassName = ptr.To("standard")
	if _, err := b.client.CoreV1().PersistentVolumeClaims("ns").Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.eventually("informer sees the change", func() string {
		if got, _ := b.c.Claims.PersistentVolumeClaims("ns").Get("claim1"); modification.SpecClass(got) != "standard" {
			return "not yet"
		}
		return ""
	})
	d.setAnswer(nil)
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(d.last.GetMutableParameters(), fast.Parameters) {
		t.Errorf("resumed with %v, want the target fast's", d.last.GetMutableParameters())
	}
	if got := ptr.Deref(b.claim().Status.CurrentVolumeAttributesClassName, ""); got != "fast" {
		t.Errorf("current class %q, want fast (standard comes with the next sync)", got)
	}
}

// A driver without MODIFY_VOLUME: the claim says so instead of waiting.
func TestDriverWithoutModifyIsReportedOnTheClaim(t *testing.T) {
	d := serveDriver(t)
	handle := d.createVolume(t, "v1", nil)
	d.ep.Info.Modify = false // as if the driver did not report MODIFY_VOLUME
	b := newBed(t, csi.NewPool(d.ep), testClaim("fast"), testPV(handle), standard, fast)
	res, err := b.syncResult()
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter() != resizing.DefaultRetryMax {
		t.Errorf("again after %s, want the slow retry", res.RequeueAfter())
	}
	c := b.claim()
	e := condition(c, v1.PersistentVolumeClaimVolumeModifyVolumeError)
	if st := c.Status.ModifyVolumeStatus; st == nil || st.Status != v1.PersistentVolumeClaimModifyVolumeInfeasible || st.TargetVolumeAttributesClassName != "fast" {
		t.Errorf("status %s", describe(st))
	}
	if e == nil || e.Reason != "Unimplemented" {
		t.Errorf("ModifyVolumeError %+v", e)
	}
	want := "Warning VolumeModifyFailed CSI driver " + drv + " does not support modifying volumes: controller MODIFY_VOLUME capability is not reported"
	if events := b.drained(); !slices.Equal(events, []string{want}) {
		t.Errorf("events %q, want %q", events, want)
	}
	b.client.ClearActions()
	if res, err := b.syncResult(); err != nil || len(b.writes()) != 0 || len(b.drained()) != 0 || d.calls() != 0 || res.RequeueAfter() <= 0 {
		t.Errorf("a second sync: %v, writes %v, %d calls, again after %s", err, b.writes(), d.calls(), res.RequeueAfter())
	}
}

// Emptying the spec class after a failed attempt cancels it.
func TestEmptiedClassCancels(t *testing.T) {
	d := serveDriver(t)
	handle := d.createVolume(t, "v1", nil)
	claim := testClaim("", func(c *v1.PersistentVolumeClaim) {
		c.Spec.VolumeAttributesClassName = nil
		c.Status.CurrentVolumeAttributesClassName = nil
		c.Status.ModifyVolumeStatus = &v1.ModifyVolumeStatus{Status: v1.PersistentVolumeClaimModifyVolumeInfeasible, TargetVolumeAttributesClassName: "gold"}
		c.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimVolumeModifyingVolume, Status: v1.ConditionTrue}}
	})
	b := newBed(t, csi.NewPool(d.ep), claim, testPV(handle))
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	if c := b.claim(); len(c.Status.Conditions) != 0 || c.Status.ModifyVolumeStatus == nil {
		t.Errorf("claim status %+v", c.Status)
	}
	if events := b.drained(); !slices.Equal(events, []string{"Normal VolumeModifyCanceled Cancelled modify."}) {
		t.Errorf("events %q", events)
	}
	if d.calls() != 0 {
		t.Errorf("%d calls", d.calls())
	}
}

func TestAnotherDriversVolumeIsLeftAlone(t *testing.T) {
	d := serveDriver(t)
	pv := testPV("h")
	pv.Spec.CSI.Driver = "other.example.com"
	b := newBed(t, csi.NewPool(d.ep), testClaim("fast"), pv, fast)
	if err := b.sync(); err != nil || len(b.writes()) != 0 || d.calls() != 0 {
		t.Errorf("sync: %v, writes %v, %d calls", err, b.writes(), d.calls())
	}
}

// The secret named on the PV goes with the call.
func TestModifySecretFromThePV(t *testing.T) {
	d := serveDriver(t)
	handle := d.createVolume(t, "v1", nil)
	pv := testPV(handle)
	pv.Annotations = map[string]string{modification.AnnModifySecretName: "creds", modification.AnnModifySecretNamespace: "ns"}
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"k": []byte("v")}}
	b := newBed(t, csi.NewPool(d.ep), testClaim("fast"), pv, fast, secret)
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	if got := d.last.GetSecrets(); got["k"] != "v" {
		t.Errorf("secrets %v", got)
	}
	pv.Annotations[modification.AnnModifySecretName] = "missing"
	b2 := newBed(t, csi.NewPool(d.ep), testClaim("fast"), pv, fast)
	err := b2.sync()
	if err == nil || !strings.Contains(err.Error(), "error getting secret missing in namespace ns") {
		t.Errorf("sync without the secret: %v", err)
	}
	if errors.Is(err, errClassMissing) {
		t.Error("wrong error")
	}
}

// A loop that stopped between the PV write and the claim's (or a restart
// while InProgress) resumes the status target: the driver is asked again
// (the call is idempotent) and only the claim is written.
func TestRestartAfterThePVWriteFinishesWithOneWrite(t *testing.T) {
	d := serveDriver(t)
	handle := d.createVolume(t, "v1", fast.Parameters)
	claim := testClaim("fast", func(c *v1.PersistentVolumeClaim) {
		c.Status.ModifyVolumeStatus = &v1.ModifyVolumeStatus{Status: v1.PersistentVolumeClaimModifyVolumeInProgress, TargetVolumeAttributesClassName: "fast"}
		c.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimVolumeModifyingVolume, Status: v1.ConditionTrue}}
	})
	pv := testPV(handle)
	pv.Spec.VolumeAttributesClassName = ptr.To("fast")
	b := newBed(t, csi.NewPool(d.ep), claim, pv, standard, fast)
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.writes(), []string{"patch persistentvolumeclaims/status"}; !slices.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	if c := b.claim(); c.Status.ModifyVolumeStatus != nil || ptr.Deref(c.Status.CurrentVolumeAttributesClassName, "") != "fast" || len(c.Status.Conditions) != 0 {
		t.Errorf("claim status %+v", c.Status)
	}
	if d.calls() != 1 {
		t.Errorf("%d calls, want the one that makes sure", d.calls())
	}
	if events := b.drained(); !slices.Equal(events, []string{"Normal VolumeModifySuccessful external resizer modified volume claim1 with vac fast successfully"}) {
		t.Errorf("events %q", events)
	}
}

// The claim's spec.volumeName is the user's word: a PV whose claimRef is
// another claim is not modified for this one (the resizer checks the same).
func TestVolumeBoundToAnotherClaimIsNotModified(t *testing.T) {
	d := serveDriver(t)
	handle := d.createVolume(t, "v1", standard.Parameters)
	pv := testPV(handle)
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "victim", Name: "data", UID: "u-victim"}
	b := newBed(t, csi.NewPool(d.ep), testClaim("fast"), pv, standard, fast)
	if err := b.sync(); err != nil {
		t.Fatal(err)
	}
	if n := d.calls(); n != 0 {
		t.Errorf("%d ControllerModifyVolume calls on another claim's volume", n)
	}
	if got := b.writes(); len(got) != 0 {
		t.Errorf("writes %v, want none", got)
	}
	if got := b.pvClass(); got != "standard" {
		t.Errorf("PV class %q, want standard", got)
	}
}
