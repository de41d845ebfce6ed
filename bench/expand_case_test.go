package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
)

// expandTo is the size every claim grows to, from createClaim's 1Mi.
var expandTo = resource.MustParse("2Mi")

// runExpandCase brings up `up`, binds n claims, then raises every claim's
// request and measures until each claim's capacity shows the new size.
func runExpandCase(referenceLimits bool, n int) (expandResult, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "vp-bench-expand-")
	if err != nil {
		return expandResult{}, err
	}
	defer os.RemoveAll(dir)
	cp, err := cluster.Start(ctx, cluster.Config{DataDir: dir + "/cp", Nodes: 3, UnsafeNoFsync: true})
	if err != nil {
		return expandResult{}, err
	}
	defer cp.Stop()
	counters := map[string]*writeCounter{}
	for _, c := range []string{clientExpander, clientResizer, clientOthers} {
		counters[c] = &writeCounter{}
	}
	stack, err := stacktest.StartStack(ctx, cp, stacktest.StackConfig{DataDir: dir + "/stack",
		Loops: func(c *manager.Config) {
			c.Controllers = []string{manager.Binder, manager.Provisioner, manager.PVCProtection, manager.PVProtection}
			c.REST.Wrap(counters[clientOthers].wrap)
		},
	})
	if err != nil {
		return expandResult{}, err
	}
	defer stack.Stop()
	stop := startExpandLoops(stack, referenceLimits, counters)
	defer stop()

	client := kubernetes.NewForConfigOrDie(protobuf(cp.RESTConfig, -1))
	if err := bindClaims(ctx, client, stack, n, bundle.ImmediateClass); err != nil {
		return expandResult{}, err
	}
	return measureExpansions(ctx, client, n, counters)
}

// startExpandLoops runs the expander and the resizer as managers of their
// own, each with a counting client at the case's limits.
func startExpandLoops(stack *stacktest.Stack, referenceLimits bool, counters map[string]*writeCounter) func() {
	var limits map[string][2]float32
	if referenceLimits {
		limits = map[string][2]float32{
			clientExpander: {20, 30}, // kube-controller-manager
			clientResizer:  {5, 10},  // external-resizer
		}
	}
	return startCountedLoops(stack, map[string]string{clientExpander: manager.Expander, clientResizer: manager.Resizer}, limits, counters)
}

// measureExpansions raises every claim's request (16 writers) and watches
// the claims until each one's status.capacity reached the new size.
func measureExpansions(ctx context.Context, client kubernetes.Interface, n int, counters map[string]*writeCounter) (expandResult, error) {
	g := newGrowth(n)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(benchNS))
	_, _ = factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { g.claimSeen(obj) },
		UpdateFunc: func(_, obj any) { g.claimSeen(obj) },
	})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for _, c := range counters {
		c.reset()
	}
	patch := fmt.Appendf(nil, `{"spec":{"resources":{"requests":{"storage":%q}}}}`, expandTo.String())
	cpuBefore := cpuSeconds()
	began := time.Now()
	err := parallel(n, func(i int) error {
		g.raised(i)
		_, err := client.CoreV1().PersistentVolumeClaims(benchNS).Patch(ctx, claimName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return expandResult{}, err
	}
	if err := waitFor(ctx, 30*time.Minute, func() (bool, error) { return g.count() == n, nil }); err != nil {
		return expandResult{}, fmt.Errorf("expansion: %w (%d of %d)", err, g.count(), n)
	}
	r := g.result(began)
	r.CPUSeconds = cpuSeconds() - cpuBefore
	settle(ctx, counters)
	r.Writes = map[string]map[string]int64{}
	for name, c := range counters {
		r.Writes[name] = c.snapshot()
	}
	return r, nil
}

// growth records, per claim index, when its request was raised and when its
// capacity was first seen at the new size.
type growth struct {
	mu              sync.Mutex
	raisedAt, grown []time.Time
	nGrown          int
}

func newGrowth(n int) *growth {
	return &growth{raisedAt: make([]time.Time, n), grown: make([]time.Time, n)}
}

func (g *growth) raised(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.raisedAt[i] = time.Now()
}

func (g *growth) claimSeen(obj any) {
	c, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	got, ok := c.Status.Capacity[corev1.ResourceStorage]
	if !ok || got.Cmp(expandTo) < 0 {
		return
	}
	var i int
	if _, err := fmt.Sscanf(c.Name, "c-%d", &i); err != nil || i >= len(g.grown) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.grown[i].IsZero() {
		g.grown[i] = time.Now()
		g.nGrown++
	}
}

func (g *growth) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nGrown
}

func (g *growth) result(began time.Time) expandResult {
	g.mu.Lock()
	defer g.mu.Unlock()
	var r expandResult
	var last time.Time
	for i := range g.grown {
		r.Latencies = append(r.Latencies, g.grown[i].Sub(g.raisedAt[i]).Seconds())
		if g.grown[i].After(last) {
			last = g.grown[i]
		}
	}
	slices.Sort(r.Latencies)
	r.All = last.Sub(began).Seconds()
	return r
}
