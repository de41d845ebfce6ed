package groupsnapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/endpoint"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// syncCounts counts the syncs of each key of a runner's queues, as
// "queue/key".
type syncCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *syncCounts) of(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[key]
}

// count wraps every queue's sync of the runner (before Run), the queues
// named in order.
func count(r *loop.Runner, names ...string) *syncCounts {
	s := &syncCounts{n: map[string]int{}}
	for i := range r.Queues {
		q, name := &r.Queues[i], names[i]
		next := q.Sync
		q.Sync = func(ctx context.Context, key string) (loop.Result, error) {
			s.mu.Lock()
			s.n[name+"/"+key]++
			s.mu.Unlock()
			return next(ctx, key)
		}
	}
	return s
}

// hp is the node-local hostpath driver the counting tests share,
// served in the test process on first use.
var hp struct {
	once           sync.Once
	err            error
	ep             *csi.Endpoint
	createFailures atomic.Int32 // CreateVolumeGroupSnapshot calls still to refuse
	creates        atomic.Int32 // CreateVolumeGroupSnapshot calls seen
}

const node = "n1"

func serveDriver(t *testing.T) *csi.Endpoint {
	t.Helper()
	hp.once.Do(func() {
		dir, err := os.MkdirTemp("", "vp-gsc-")
		if err != nil {
			hp.err = err
			return
		}
		addr := endpoint.Format(filepath.Join(dir, "d.sock"))
		drv, err := hostpath.New(hostpath.Config{Endpoint: addr, NodeID: node, DataDir: filepath.Join(dir, "data"), Capacity: 1 << 30,
			Mounter: hostpath.NewFakeMounter(), Interceptor: intercept})
		if err != nil {
			hp.err = err
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); _ = drv.Run(ctx) }()
		stopDriver = func() { cancel(); <-ran; _ = os.RemoveAll(dir) }
		for hp.ep == nil {
			if hp.ep, err = csi.Dial(ctx, addr, nil); err != nil {
				select {
				case <-ran:
					hp.err = fmt.Errorf("driver stopped: %w", err)
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	})
	if hp.err != nil {
		t.Fatal(hp.err)
	}
	return hp.ep
}

// uids numbers the UIDs of every test's objects: the driver outlives a
// test, and takes a group's name from its UID.
var uids atomic.Int64

// stopDriver stops the driver once the tests ran (TestMain).
var stopDriver = func() {}

// counted is both halves running over fake clientsets that, as the API
// server, give every write a resourceVersion and every new object a UID,
// with their syncs counted.
type counted struct {
	client     kubernetes.Interface
	snaps      snapclient.Interface
	driver     *csi.Endpoint
	controller *syncCounts
	sidecar    *syncCounts
	ctrl       *Controller
}

// startCounted starts both halves, with a retry start and max of retry,
// until the test ends.
func startCounted(t *testing.T, retry time.Duration) *counted {
	t.Helper()
	b := &counted{driver: serveDriver(t)}
	var rv atomic.Int64
	// An update carries the resourceVersion it read and fails on a newer
	// one (the fake's tracker would let a stale copy overwrite).
	stamp := func(tracker k8stesting.ObjectTracker) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			o, ok := a.(interface{ GetObject() runtime.Object })
			if !ok {
				return false, nil, nil
			}
			m, ok := o.GetObject().(metav1.Object)
			if !ok {
				return false, nil, nil
			}
			if u, ok := a.(k8stesting.UpdateAction); ok {
				cur, err := tracker.Get(u.GetResource(), u.GetNamespace(), m.GetName())
				if err == nil && cur.(metav1.Object).GetResourceVersion() != m.GetResourceVersion() {
					return true, nil, apierrors.NewConflict(u.GetResource().GroupResource(), m.GetName(), errors.New("the object has been modified"))
				}
			}
			m.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
			if _, create := a.(k8stesting.CreateAction); create && m.GetUID() == "" {
				m.SetUID(types.UID(fmt.Sprintf("uid-%d", uids.Add(1))))
			}
			return false, nil, nil
		}
	}
	client := fake.NewClientset()
	sc := snapfake.NewSimpleClientset()
	client.PrependReactor("create", "*", stamp(client.Tracker()))
	client.PrependReactor("update", "*", stamp(client.Tracker()))
	sc.PrependReactor("create", "*", stamp(sc.Tracker()))
	sc.PrependReactor("update", "*", stamp(sc.Tracker()))
	b.client, b.snaps = client, sc
	ctx, cancel := context.WithCancel(context.Background())
	var stops []func()
	t.Cleanup(func() {
		cancel()
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	})
	// The classes `volplane up` installs.
	_, groupClasses := bundle.SnapshotClasses()
	for _, gc := range groupClasses {
		if _, err := sc.GroupsnapshotV1().VolumeGroupSnapshotClasses().Create(ctx, gc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	inf := informers.NewSharedInformerFactory(b.client, 0)
	sinf := snapinformers.NewSharedInformerFactory(b.snaps, 0)
	// No resync within the test: every sync counted is one an event or
	// the loop itself asked for.
	cfg := Config{Client: b.client, Snapshots: b.snaps, Informers: inf, SnapshotInformers: sinf, Recorder: record.NewFakeRecorder(1000),
		Pool: csi.NewPool(b.driver), Settings: loop.Settings{ResyncPeriod: time.Hour, RetryStart: retry, RetryMax: retry}}
	c, err := NewController(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSidecar(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.ctrl = c
	b.controller = count(c.runner, "group", "content")
	b.sidecar = count(s.runner, "content")
	inf.Start(ctx.Done())
	sinf.Start(ctx.Done())
	stops = append(stops, inf.Shutdown, sinf.Shutdown)
	for _, r := range []interface{ Run(context.Context) error }{c, s} {
		done := make(chan struct{})
		go func() { defer close(done); _ = r.Run(ctx) }()
		stops = append(stops, func() { <-done })
	}
	return b
}

func intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if _, ok := req.(*csipb.CreateVolumeGroupSnapshotRequest); ok {
		hp.creates.Add(1)
		if hp.createFailures.Add(-1) >= 0 {
			return nil, status.Error(codes.Unavailable, "driver busy")
		}
	}
	return handler(ctx, req)
}

// claims makes n volumes on the driver, their PVs and Bound claims
// labelled app=db in namespace ns.
func (b *counted) claims(t *testing.T, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("db-%d", i)
		vol, err := b.driver.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: ns + "-" + name, CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
			VolumeCapabilities: []*csipb.VolumeCapability{{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
				AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}})
		if err != nil {
			t.Fatal(err)
		}
		size := resource.MustParse("1Mi")
		claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "db"}},
			Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, VolumeName: "pv-" + ns + "-" + name,
				Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}}}}
		if claim, err = b.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: claim.Spec.VolumeName},
			Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: size}, AccessModes: claim.Spec.AccessModes,
				ClaimRef:               &v1.ObjectReference{Namespace: ns, Name: name, UID: claim.UID},
				PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: hostpath.DriverName, VolumeHandle: vol.GetVolumeId()}},
				NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
					MatchExpressions: []v1.NodeSelectorRequirement{{Key: hostpath.TopologyKey, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}}}
		if _, err := b.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		claim.Status.Phase = v1.ClaimBound
		if _, err := b.client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// group makes the group of the app=db claims of ns (default class) and
// waits for it to be ready with every member bound.
func (b *counted) group(t *testing.T, ns string, members int) *vgsv1.VolumeGroupSnapshot {
	t.Helper()
	ctx := context.Background()
	// The group takes the claims the controller knows Bound when it is
	// made: all of them.
	eventually(t, "claims known Bound", func() string {
		claims, _ := b.ctrl.claims.PersistentVolumeClaims(ns).List(labels.Everything())
		bound := 0
		for _, c := range claims {
			if _, err := b.ctrl.pvs.Get(c.Spec.VolumeName); err == nil && c.Status.Phase == v1.ClaimBound {
				bound++
			}
		}
		if bound != members {
			return fmt.Sprintf("%d of %d", bound, members)
		}
		return ""
	})
	g := &vgsv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "grp", Namespace: ns},
		Spec: vgsv1.VolumeGroupSnapshotSpec{Source: vgsv1.VolumeGroupSnapshotSource{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}
	g, err := b.snaps.GroupsnapshotV1().VolumeGroupSnapshots(ns).Create(ctx, g, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "group ready, members bound", func() string {
		got, err := b.snaps.GroupsnapshotV1().VolumeGroupSnapshots(ns).Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil || got.Status == nil || got.Status.ReadyToUse == nil || !*got.Status.ReadyToUse {
			return fmt.Sprintf("group %v %+v", err, got.Status)
		}
		list, err := b.snaps.SnapshotV1().VolumeSnapshots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		bound := 0
		for _, vs := range list.Items {
			if vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil && vs.Status.VolumeGroupSnapshotName != nil {
				bound++
			}
		}
		if bound != members {
			return fmt.Sprintf("%d of %d members bound", bound, members)
		}
		return ""
	})
	return g
}

// A group of 3 claims becomes ready in a bounded number of syncs: one per
// step of the controller (class, finalizer, content, 4 per member, status)
// and per change the sidecar makes, each decided from the write that came
// before; the event of a loop's own write syncs nothing. It once took one
// sync per write more, each ~20 ms apart, and a failing driver was asked
// again at the speed of those events, whatever the backoff.
func TestGroupBecomesReadyInABoundedNumberOfSyncs(t *testing.T) {
	b := startCounted(t, time.Second)
	const members = 3
	b.claims(t, "team-a", members)
	g := b.group(t, "team-a", members)
	content := "content/" + snapshotapi.GroupContentName(g.UID)
	// The group: its creation, SetClass, CreateContent, AddFinalizer, 4
	// per member, UpdateStatus, each followed at once by the sync that
	// decides the next step; plus the sidecar's 3 writes (mark, status,
	// unmark), which wake it, and 2 for the content's first version,
	// whose event may come after the content's finalizer (only the last
	// write's event is known as our own there). Once, each step came
	// from its own write's event instead, and these came too.
	steps := 1 + 3 + 4*members + 1
	if got, most := b.controller.of("group/team-a/grp"), steps+3+2; got > most {
		t.Errorf("the group took %d syncs, want at most %d (%d steps)", got, most, steps)
	}
	// The content in the controller: queued by its creation and by the
	// sidecar's 3 writes, and by the group's versions that name it whose
	// event comes after the group's next write (only the last write's
	// event is known as our own).
	if got, most := b.controller.of(content), 1+3+members+2; got > most {
		t.Errorf("the controller synced the content %d times, want at most %d", got, most)
	}
	// The sidecar: created, marked, called, unmarked, plus the
	// controller's finalizer.
	if got := b.sidecar.of(content); got > 6 {
		t.Errorf("the sidecar synced the content %d times, want at most 6", got)
	}
	t.Logf("syncs: group %d, content %d (controller) %d (sidecar)", b.controller.of("group/team-a/grp"), b.controller.of(content), b.sidecar.of(content))
}

// A driver that refuses CreateVolumeGroupSnapshot (a transient error) is
// asked again after the backoff, not at the speed of the events of the
// status each refusal wrote: the same refusal again leaves the status as
// it is. It was once written back empty, its event asked the driver again
// at once, and the next refusal wrote the error again: a group the driver
// kept refusing was asked every ~20 ms.
func TestRefusedGroupKeepsItsErrorAndIsAskedAgainAfterTheBackoff(t *testing.T) {
	b := startCounted(t, 200*time.Millisecond)
	hp.createFailures.Store(3)
	hp.creates.Store(0)
	b.claims(t, "team-b", 1)
	ctx := context.Background()
	w, err := b.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	g := b.group(t, "team-b", 1)
	if got := hp.creates.Load(); got != 4 {
		t.Errorf("%d CreateVolumeGroupSnapshot calls, want 4 (3 refused, 1 answered)", got)
	}
	content := snapshotapi.GroupContentName(g.UID)
	// Every version of the content up to ready: once an error is in its
	// status, no version drops the status.
	failed, versions := false, 0
	for e := range w.ResultChan() {
		gc, ok := e.Object.(*vgsv1.VolumeGroupSnapshotContent)
		if !ok || gc.Name != content {
			continue
		}
		versions++
		if gc.Status != nil && gc.Status.Error != nil {
			failed = true
		}
		if failed && gc.Status == nil {
			t.Fatalf("version %s of the content lost its status after a refusal", gc.ResourceVersion)
		}
		if gc.Status != nil && gc.Status.ReadyToUse != nil && *gc.Status.ReadyToUse {
			break
		}
	}
	if !failed {
		t.Errorf("no refusal was recorded in the content's status")
	}
	// The sidecar: created, the controller's finalizer, marked, each
	// call (the 3 refusals' retries and the answer), unmarked; the
	// content's versions: created, finalizer, mark, one error, answer,
	// unmark, and one for a refusal that raced the finalizer's event.
	if got := b.sidecar.of("content/" + content); got > 9 {
		t.Errorf("the sidecar synced the content %d times, want at most 9", got)
	}
	if versions > 8 {
		t.Errorf("the content was written %d times up to ready, want at most 8", versions)
	}
	t.Logf("syncs: group %d, content %d (controller) %d (sidecar); %d versions", b.controller.of("group/team-b/grp"),
		b.controller.of("content/"+content), b.sidecar.of("content/"+content), versions)
}
