package expansion

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/resizer"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// env is one test's world: a client to arrange and inspect, and the
// resizer under test.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string // a fresh namespace
	loop   *stacktest.LoopRun
}

func newEnv(t *testing.T) *env {
	cp := stacktest.ControlPlane(t)
	e := &env{t: t, ctx: context.Background(), client: cp.Client, ns: stacktest.Namespace(t)}
	// Registered first, so it runs last: after the test's resizers stopped.
	t.Cleanup(e.checkInvariants)
	return e
}

// checkInvariants waits until no promise of expansion (invariants.Resized)
// is broken across the cluster; newEnv runs it when each test ends.
func (e *env) checkInvariants() {
	e.t.Helper()
	support.Holds(e.t, stacktest.WaitTimeout, func() []string {
		return invariants.Resized(support.ReadState(e.t, e.client, bed.endpoint))
	})
}

// start runs a resizer until the test ends; crashAt > 0 stops it right
// after that many writes. Its events go through a client of their own,
// not counted, as the manager's do.
func (e *env) start(crashAt int) *stacktest.LoopRun {
	e.t.Helper()
	e.loop = stacktest.StartLoop(e.t, crashAt, func(d stacktest.LoopDeps) (interface{ Run(context.Context) error }, error) {
		return resizer.New(resizer.Config{Client: d.Client, Informers: d.Informers, Pool: bed.pool, Workers: 2,
			Recorder: func(driver string) record.EventRecorder { return d.Recorder(resizing.EventComponent(driver)) }})
	})
	return e.loop
}

// claim creates a claim of class asking for size and waits until it is
// Bound; it returns the claim and its PV's name. mods change the claim
// before it is created.
func (e *env) claim(name, class, size string, mods ...func(*corev1.PersistentVolumeClaim)) (*corev1.PersistentVolumeClaim, string) {
	e.t.Helper()
	c := support.Claim(e.ns, name, class, size, mods...)
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create claim: %v", err)
	}
	e.eventually("claim "+name+" Bound", func() string {
		c = e.getClaim(name)
		if c.Status.Phase != corev1.ClaimBound {
			return "phase " + string(c.Status.Phase)
		}
		return ""
	})
	return c, c.Spec.VolumeName
}

// request sets the claim's request to size, as a user editing it would.
func (e *env) request(name, size string) error {
	patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, size)
	_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

func (e *env) getClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get claim: %v", err)
	}
	return c
}

func (e *env) getPV(name string) *corev1.PersistentVolume {
	e.t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get PV: %v", err)
	}
	return pv
}

// events lists "<type> <reason> <message>" of the resizer's events on the
// claim.
func (e *env) events(name string) []string {
	e.t.Helper()
	list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
	if err != nil {
		e.t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Source.Component == resizing.EventComponent(hostpath.DriverName) {
			out = append(out, ev.Type+" "+ev.Reason+" "+ev.Message)
		}
	}
	return out
}

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, func() error {
		if err := bed.shared.EndedEarly(); err != nil {
			return fmt.Errorf("binder and provisioner: %w", err)
		}
		if e.loop == nil {
			return nil
		}
		select {
		case <-e.loop.Ended():
			return fmt.Errorf("the resizer ended: %v", e.loop.Err())
		default:
			return nil
		}
	})
}

// waitCapacity waits until the claim reports capacity size with nothing of
// an expansion left in its status, and returns it.
func (e *env) waitCapacity(name, size string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	var c *corev1.PersistentVolumeClaim
	e.eventually("claim "+name+" at "+size, func() string {
		c = e.getClaim(name)
		s := c.Status
		switch {
		case s.Capacity.Storage().Cmp(resource.MustParse(size)) != 0:
			return "capacity " + s.Capacity.Storage().String() + ", status " + fmt.Sprint(s.AllocatedResourceStatuses)
		case s.AllocatedResourceStatuses != nil || len(s.Conditions) != 0:
			return fmt.Sprintf("resize status %v, conditions %v", s.AllocatedResourceStatuses, s.Conditions)
		}
		return ""
	})
	return c
}

func hasEvent(events []string, want string) bool {
	for _, e := range events {
		if e == want {
			return true
		}
	}
	return false
}

// writesAre checks the resizer's writes about the objects named are
// exactly want. A write is counted once its answer reached the resizer,
// which may be after the test saw its effect, so the count is waited for.
func (e *env) writesAre(r *stacktest.LoopRun, want []string, names ...string) {
	e.t.Helper()
	e.eventually("the resizer's writes counted", func() string {
		if got := r.Writes.About(names...); len(got) < len(want) {
			return fmt.Sprintf("%q so far", got)
		}
		return ""
	})
	if got := r.Writes.About(names...); !slices.Equal(got, want) {
		e.t.Errorf("writes\n got %q\nwant %q", got, want)
	}
}
