package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// The protection scenario: N unused claims (Pending, of the bench's static
// class) and N free PVs, each made with its protection finalizer by the
// API server's admission, all before the controllers start and not timed;
// no binder runs, so none is bound. The clock starts when every claim and
// every PV is deleted at once, from the workload's writers; pair i counts
// from the DELETE of its claim until a watch has seen both claim i and PV
// i gone, which takes the protection loops' removing their finalizers.

// The client limits of kube-controller-manager, whose pvc-protection and
// pv-protection loops the protection scenario's controller replaces.
const (
	ProtectionQPS   = 20
	ProtectionBurst = 30
)

// protectionControllers are kube-controller-manager's names for its
// protection loops, as --controllers and cluster.Config.KeepControllers
// take them; volplane's loops bear the same names.
var protectionControllers = []string{"pvc-protection", "pv-protection"}

// createProtectionWorkload creates the claims and the PVs, every one with
// its protection finalizer (added by the API server's
// StorageObjectInUseProtection admission).
func (e *sideEnv) createProtectionWorkload(ctx context.Context) error {
	n, w := e.o.Pairs, e.work
	e.progress.start("creating PVs and unused claims", 2*n)
	defer e.progress.done()
	return forEach(ctx, n, func() { e.progress.add(2) }, func(i int) error {
		if err := w.createVolume(ctx, i); err != nil {
			return fmt.Errorf("creating %s: %w", volumeName(i), err)
		}
		return w.createClaim(ctx, Static, i)
	})
}

// startGoneWatch records, by claim name, when both claim i and PV i have
// been seen deleted.
func startGoneWatch(ctx context.Context, client kubernetes.Interface) (*bindWatch, error) {
	w, pairs := newBindWatch(), newPairsGone()
	gone := func(obj any) {
		if i, ok := pairIndex(obj); ok && pairs.gone(i) {
			w.see(claimName(i))
		}
	}
	claims := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(benchNS))
	pvs := informers.NewSharedInformerFactory(client, 0)
	infs := []cache.SharedIndexInformer{claims.Core().V1().PersistentVolumeClaims().Informer(),
		pvs.Core().V1().PersistentVolumes().Informer()}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: gone}); err != nil {
			return nil, err
		}
	}
	claims.Start(ctx.Done())
	pvs.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), infs[0].HasSynced, infs[1].HasSynced) {
		return nil, fmt.Errorf("watching claims and PVs: %w", ctx.Err())
	}
	return w, nil
}

// pairIndex is the pair a deleted claim or PV of the workload belongs to.
func pairIndex(obj any) (int, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	var name, format string
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		name, format = o.Name, "c-%d"
	case *corev1.PersistentVolume:
		name, format = o.Name, "pv-%d"
	default:
		return 0, false
	}
	var i int
	if _, err := fmt.Sscanf(name, format, &i); err != nil {
		return 0, false
	}
	return i, true
}

// pairsGone counts, per pair, how many of its claim and PV are gone.
type pairsGone struct {
	mu sync.Mutex
	n  map[int]int
}

func newPairsGone() *pairsGone { return &pairsGone{n: map[int]int{}} }

// gone records one more object of pair i gone and says whether the pair
// is now gone whole.
func (p *pairsGone) gone(i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n[i]++
	return p.n[i] == 2
}

// deletePairs deletes every claim, then its PV, from the workload's
// writers, and returns, by claim name, when each claim's DELETE was sent.
func (e *sideEnv) deletePairs(ctx context.Context) (map[string]time.Time, error) {
	return timed(ctx, e.o.Pairs, func(i int) error {
		if err := e.work.deleteClaim(ctx, i); err != nil {
			return fmt.Errorf("deleting %s: %w", claimName(i), err)
		}
		e.work.writes.Add(1)
		if err := e.admin.CoreV1().PersistentVolumes().Delete(ctx, volumeName(i), metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting %s: %w", volumeName(i), err)
		}
		return nil
	})
}

// protectionProcesses are the side's controllers: on volplane's side its
// pvc-protection and pv-protection loops, each a measured `volplane
// controller` at kube-controller-manager's limits (kube-controller-manager
// builds a client, and so a rate limiter, per loop: one process for both
// would halve their budget); on the reference's none, for
// kube-controller-manager's loops run inside the control plane (see
// clusterConfig).
func (e *sideEnv) protectionProcesses(ctx context.Context, env []string, limits []string) ([]*controllerProcess, error) {
	if e.name == Reference {
		return nil, nil
	}
	var procs []*controllerProcess
	for _, loop := range protectionControllers {
		args := append([]string{"controller", "--controllers", loop,
			"--leader-elect=false", "--metrics-bind-address", "127.0.0.1:0"}, limits...)
		if e.o.Workers > 0 {
			args = append(args, "--workers", fmt.Sprint(e.o.Workers))
		}
		if e.o.Profile != "" {
			args = append(args, "--cpuprofile", e.o.Profile+"."+loop+".cpu.pprof", "--profiling")
		}
		p, err := startProcess(ctx, e.o.Executable, e.dir, e.name+" "+loop, true, env, args...)
		if err != nil {
			for _, q := range procs {
				q.stop()
			}
			return nil, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// protectionCeilingWrites is what the trivial writer writes per pair: the
// claim's finalizer removed and the PV's, the writes both sides make.
const protectionCeilingWrites = 2

// measureProtectionCeiling creates up to ceilingPairs claims and PVs, each
// with its protection finalizer, deletes them (neither timed), then times
// removing every finalizer with one merge patch per object, from the
// workload's writers. No protection loop may run meanwhile: it would race
// the writer.
func measureProtectionCeiling(ctx context.Context, client kubernetes.Interface, pairs int) (*Ceiling, error) {
	n := min(pairs, ceilingPairs)
	w := &workload{client: client}
	claims, pvs := client.CoreV1().PersistentVolumeClaims(benchNS), client.CoreV1().PersistentVolumes()
	err := forEach(ctx, n, func() {}, func(i int) error {
		if err := w.createVolume(ctx, i); err != nil {
			return err
		}
		if err := w.createClaim(ctx, Static, i); err != nil {
			return err
		}
		if err := w.deleteClaim(ctx, i); err != nil {
			return err
		}
		return pvs.Delete(ctx, volumeName(i), metav1.DeleteOptions{})
	})
	if err != nil {
		return nil, fmt.Errorf("ceiling: deleting pairs: %w", err)
	}
	release := []byte(`{"metadata":{"finalizers":null}}`)
	began := time.Now()
	err = forEach(ctx, n, func() {}, func(i int) error {
		if _, err := claims.Patch(ctx, claimName(i), types.MergePatchType, release, metav1.PatchOptions{}); err != nil {
			return err
		}
		_, err := pvs.Patch(ctx, volumeName(i), types.MergePatchType, release, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	s := time.Since(began).Seconds()
	writes := int64(protectionCeilingWrites * n)
	return &Ceiling{Writes: writes, Seconds: s, WritesPerSec: float64(writes) / s}, nil
}

// protectionWording turns the report's bind wording into the protection
// scenario's; the JSON keeps its field names.
var protectionWording = strings.NewReplacer(
	"claims bound", "pairs deleted",
	"time to bind all", "time to all gone",
	"binds/s", "pairs gone/s",
	"time to Bound", "claim deleted → pair gone",
	"per bind", "per pair",
)
