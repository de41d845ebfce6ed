package healthmonitor

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/health"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
)

// answers makes the driver's ControllerListVolumeHealth (and, with noList,
// ControllerGetVolumeHealth, the list capability hidden) say what the test
// sets.
type answers struct {
	mu     sync.Mutex
	sick   map[string]bool
	noList bool
}

func (a *answers) set(handle string, sick bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sick[handle] = sick
}

func (a *answers) entry(handle string) *csipb.VolumeHealth {
	h := &csipb.VolumeHealth{VolumeId: handle}
	if a.sick[handle] {
		h.HealthStatuses = []*csipb.VolumeHealth_VolumeHealthEntry{{Status: csipb.VolumeHealthErrorType_INACCESSIBLE, Reason: "DataMissing", Message: "gone"}}
	}
	return h
}

func (a *answers) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch r := req.(type) {
	case *csipb.ControllerListVolumeHealthRequest:
		resp := &csipb.ControllerListVolumeHealthResponse{}
		for h, sick := range a.sick {
			if sick {
				resp.Entries = append(resp.Entries, a.entry(h))
			}
		}
		return resp, nil
	case *csipb.ControllerGetVolumeHealthRequest:
		return &csipb.ControllerGetVolumeHealthResponse{VolumeHealth: a.entry(r.VolumeId)}, nil
	}
	resp, err := handler(ctx, req)
	if caps, ok := resp.(*csipb.ControllerGetCapabilitiesResponse); ok && a.noList {
		var kept []*csipb.ControllerServiceCapability
		for _, c := range caps.Capabilities {
			if c.GetRpc().GetType() != csipb.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH {
				kept = append(kept, c)
			}
		}
		caps.Capabilities = kept
	}
	return resp, err
}

func objects() (*v1.PersistentVolume, *v1.PersistentVolumeClaim, *v1.PersistentVolumeClaim) {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-a"}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: hostpath.DriverName, VolumeHandle: "h-a"}},
		ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "a", UID: "uid-a"}}}
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a", ResourceVersion: "1"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-a"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	thief := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "thief", UID: "uid-t", ResourceVersion: "1"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-a"}}
	return pv, claim, thief
}

// With the gate on, the claim's status.healthStatus follows the driver
// (set, then cleared) beside the events, whether the driver lists or
// only gets; the claim naming the volume without being its claim gets
// nothing.
func TestMonitorWritesTheClaimsHealthStatusWithTheGate(t *testing.T) {
	for _, noList := range []bool{false, true} {
		t.Run(map[bool]string{false: "list", true: "get"}[noList], func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			a := &answers{sick: map[string]bool{"h-a": true}, noList: noList}
			ep, err := csi.Dial(ctx, hostpathtest.ServeIntercepted(t, "node-1", 1<<30, a.intercept), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			if ep.Info.ListVolumeHealth == noList || !ep.Info.VolumeHealth {
				t.Fatalf("capabilities: list %v get %v", ep.Info.ListVolumeHealth, ep.Info.VolumeHealth)
			}
			pv, claim, thief := objects()
			client := fake.NewClientset(pv, claim, thief)
			factory := informers.NewSharedInformerFactory(client, 0)
			rec := record.NewFakeRecorder(10)
			m, err := New(Config{Client: client, Informers: factory, Pool: csi.NewPool(ep),
				Recorder:    func(string) record.EventRecorder { return rec },
				WriteStatus: func() bool { return true }})
			if err != nil {
				t.Fatal(err)
			}
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())

			m.Poll(ctx)
			want(t, rec, "Warning "+health.ReasonAbnormal+" Inaccessible/DataMissing: gone")
			got := waitClaim(t, m, "a", func(c *v1.PersistentVolumeClaim) bool { return c.Status.HealthStatus != nil })
			if !health.SetsEqual(got.Status.HealthStatus.HealthConditions, []v1.VolumeHealthCondition{{Status: v1.VolumeHealthInaccessible, Reason: "DataMissing"}}) {
				t.Errorf("healthStatus = %+v", got.Status.HealthStatus)
			}
			m.Poll(ctx) // unchanged: no event, no write
			a.set("h-a", false)
			m.Poll(ctx)
			want(t, rec, "Normal "+health.ReasonNormal+" "+health.RecoveredMessage)
			waitClaim(t, m, "a", func(c *v1.PersistentVolumeClaim) bool { return c.Status.HealthStatus == nil })
			if c, _ := client.CoreV1().PersistentVolumeClaims("other").Get(ctx, "thief", metav1.GetOptions{}); c.Status.HealthStatus != nil {
				t.Errorf("the thief's claim got %+v", c.Status.HealthStatus)
			}
			select {
			case e := <-rec.Events:
				t.Errorf("unexpected event %q", e)
			default:
			}
		})
	}
}

func want(t *testing.T, rec *record.FakeRecorder, event string) {
	t.Helper()
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, event) {
			t.Fatalf("event %q, want %q", e, event)
		}
	default:
		t.Fatalf("no event, want %q", event)
	}
}

// waitClaim waits until the monitor's cache holds ns/name as ok says.
func waitClaim(t *testing.T, m *Monitor, name string, ok func(*v1.PersistentVolumeClaim) bool) *v1.PersistentVolumeClaim {
	t.Helper()
	var got *v1.PersistentVolumeClaim
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		c, err := m.claims.PersistentVolumeClaims("ns").Get(name)
		got = c
		return err == nil && ok(c), nil
	})
	if err != nil {
		t.Fatalf("claim %s: %+v", name, got)
	}
	return got
}

// In node deployment each node's monitor reports only on the volumes its
// node's driver holds (node affinity met by the node): a volume of another
// node, or one with no node affinity (which could be anywhere), is left
// to others, so two nodes never report one claim.
func TestNodeDeploymentMonitorsItsNodesVolumesOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &answers{sick: map[string]bool{"h-a": true, "h-b": true, "h-c": true}}
	ep, err := csi.Dial(ctx, hostpathtest.ServeIntercepted(t, "node-1", 1<<30, a.intercept), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	onNode := func(pv *v1.PersistentVolume, node string) {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: hostpath.TopologyKey, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	}
	var objs []runtime.Object
	for _, name := range []string{"a", "b", "c"} {
		pv, claim, _ := objects()
		pv.Name, pv.Spec.CSI.VolumeHandle, pv.Spec.ClaimRef.Name, pv.Spec.ClaimRef.UID = "pv-"+name, "h-"+name, name, types.UID("uid-"+name)
		claim.Name, claim.UID, claim.Spec.VolumeName = name, types.UID("uid-"+name), "pv-"+name
		switch name {
		case "a":
			onNode(pv, "node-1")
		case "b":
			onNode(pv, "node-2")
		}
		objs = append(objs, pv, claim)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(10)
	m, err := New(Config{Client: client, Informers: factory, Pool: csi.NewPool(ep), NodeName: "node-1",
		Recorder: func(string) record.EventRecorder { return rec }, WriteStatus: func() bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	m.Poll(ctx)
	want(t, rec, "Warning "+health.ReasonAbnormal)
	waitClaim(t, m, "a", func(c *v1.PersistentVolumeClaim) bool { return c.Status.HealthStatus != nil })
	select {
	case e := <-rec.Events:
		t.Errorf("a second event %q: only claim a's volume is node-1's", e)
	default:
	}
	for _, name := range []string{"b", "c"} {
		if c, _ := client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, name, metav1.GetOptions{}); c.Status.HealthStatus != nil {
			t.Errorf("claim %s, not node-1's volume, got %+v", name, c.Status.HealthStatus)
		}
	}
}
