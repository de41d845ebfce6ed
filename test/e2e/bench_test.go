package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/stacktest"
)

// Speed of the whole binder against the embedded API server. These are
// benchmarks, not tests: run them one at a time with
//
//	go test -run XXX -bench Binder -benchtime 1x ./test/e2e/
//
// and read the reported metrics; the machine is shared, so compare the
// ratios measured within one run.

// BenchmarkBinderStaticPairs: 1,000 PV/claim pairs exist before the binder
// starts. It reports the API server's ceiling for the same four writes per
// pair from 16 concurrent writers, volplane's binds/s, and their ratio.
func BenchmarkBinderStaticPairs(b *testing.B) {
	const pairs, writers = 1000, 16
	withoutSharedBinder(b)
	unthrottled := unthrottled(stacktest.ControlPlane(b).RESTConfig)
	for range b.N {
		ceiling := apiCeiling(b, unthrottled, pairs, writers)
		e := benchEnv(b)
		createPairs(e, pairs)
		watch := watchBinds(e)
		began := time.Now()
		binder := startBinder(unthrottled, writers)
		watch.waitFor(b, pairs)
		elapsed := time.Since(began)
		binder.Stop()
		binds := float64(pairs) / elapsed.Seconds()
		times := watch.times()
		b.ReportMetric(ceiling, "ceiling-binds/s")
		b.ReportMetric(binds, "binds/s")
		b.ReportMetric(100*binds/ceiling, "%-of-ceiling")
		// Without the start-up (informer lists, cache sync): first to last bind.
		b.ReportMetric(times[0].Sub(began).Seconds()*1000, "startup-ms")
		b.ReportMetric(float64(pairs-1)/times[pairs-1].Sub(times[0]).Seconds(), "steady-binds/s")
	}
}

// BenchmarkBinderThrottled: under the reference's client limits (20 QPS,
// burst 30) the writes per bind decide the speed: 4 writes → 5 binds/s.
// Measured after the burst is spent.
func BenchmarkBinderThrottled(b *testing.B) {
	const pairs, skip = 100, 20
	withoutSharedBinder(b)
	rc := rest.CopyConfig(stacktest.ControlPlane(b).RESTConfig)
	rc.QPS, rc.Burst = 20, 30
	for range b.N {
		e := benchEnv(b)
		createPairs(e, pairs)
		watch := watchBinds(e)
		binder := startBinder(rc, 4)
		watch.waitFor(b, pairs)
		binder.Stop()
		times := watch.times()
		steady := times[pairs-1].Sub(times[skip-1]).Seconds()
		b.ReportMetric(float64(pairs-skip)/steady, "binds/s")
	}
}

// BenchmarkBinderArrivalLatency: claims wait; PVs arrive one by one at 20/s.
// Reports the time from each PV's creation to its claim being Bound.
func BenchmarkBinderArrivalLatency(b *testing.B) {
	const n, every = 200, 50 * time.Millisecond
	withoutSharedBinder(b)
	rc := stacktest.ControlPlane(b).RESTConfig
	for range b.N {
		e := benchEnv(b)
		for i := range n {
			e.createClaim(e.claim(fmt.Sprintf("c-%04d", i), "1Gi"))
		}
		binder := startBinder(rc, 4)
		e.waitClaimsSeen(n)
		watch := watchBinds(e)
		created := make([]time.Time, n)
		tick := time.NewTicker(every)
		for i := range n {
			<-tick.C
			created[i] = time.Now()
			e.createPV(e.pv(fmt.Sprintf("pv-%04d", i), "1Gi"))
		}
		tick.Stop()
		watch.waitFor(b, n)
		binder.Stop()
		// Claims are interchangeable: the i-th bind answers the i-th PV.
		lat := make([]time.Duration, n)
		for i, t := range watch.times() {
			lat[i] = t.Sub(created[i])
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[n/2].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(lat[n*99/100].Milliseconds()), "p99-ms")
		b.ReportMetric(float64(lat[n-1].Milliseconds()), "max-ms")
	}
}

func unthrottled(base *rest.Config) *rest.Config {
	rc := rest.CopyConfig(base)
	rc.QPS, rc.Burst = -1, 0 // a negative QPS turns client-side limiting off
	// The binder speaks protobuf; the ceiling is measured with it too.
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return rc
}

func benchEnv(b *testing.B) *env {
	b.Helper()
	cp := stacktest.ControlPlane(b)
	e := &env{t: b, ctx: context.Background(), client: cp.Client, ns: stacktest.Namespace(b)}
	e.class = e.ns + "-class"
	b.Cleanup(func() {
		// Claims go before their PVs, or the next benchmark's binder would
		// spend its budget marking a thousand leftover claims Lost.
		e.deleteAllClaims()
		e.deleteVolumes()
	})
	return e
}

// deleteAllClaims deletes every claim of the namespace and waits until they
// are gone (no pvc-protection loop runs here to release them).
func (e *env) deleteAllClaims() {
	claims, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, c := range claims.Items {
		e.deleteClaim(c.Name)
	}
}

func createPairs(e *env, n int) {
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			e.createPV(e.pv(fmt.Sprintf("pv-%04d", i), "1Gi"))
			e.createClaim(e.claim(fmt.Sprintf("c-%04d", i), "1Gi"))
		})
	}
	wg.Wait()
}

// apiCeiling measures the binds/s the API server would allow: the four bind
// writes for each of n pairs, issued sequentially per pair by concurrent
// writers with no client-side limit.
func apiCeiling(b *testing.B, rc *rest.Config, n, writers int) float64 {
	e := benchEnv(b)
	createPairs(e, n)
	client := kubernetes.NewForConfigOrDie(rc)
	jobs := make(chan int)
	var wg sync.WaitGroup
	began := time.Now()
	for range writers {
		wg.Go(func() {
			for i := range jobs {
				if err := fourWrites(e.ctx, client, e.ns, i); err != nil {
					b.Errorf("ceiling writes: %v", err)
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return float64(n) / time.Since(began).Seconds()
}

// fourWrites makes exactly the writes of a bind (the same pure steps the
// binder uses), so the API server's cost per pair is the same, and a binder
// started later finds these pairs at rest.
func fourWrites(ctx context.Context, client kubernetes.Interface, ns string, i int) error {
	pvs, claims := client.CoreV1().PersistentVolumes(), client.CoreV1().PersistentVolumeClaims(ns)
	pv, err := pvs.Get(ctx, fmt.Sprintf("%s-pv-%04d", ns, i), metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	claim, err := claims.Get(ctx, fmt.Sprintf("c-%04d", i), metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	if pv, err = pvs.Update(ctx, binding.BindVolumeSpec(pv, claim), metav1.UpdateOptions{}); err != nil {
		return err
	}
	if pv, err = pvs.UpdateStatus(ctx, binding.BindVolumeStatus(pv), metav1.UpdateOptions{}); err != nil {
		return err
	}
	if claim, err = claims.Update(ctx, binding.BindClaimSpec(claim, pv), metav1.UpdateOptions{}); err != nil {
		return err
	}
	_, err = claims.UpdateStatus(ctx, binding.BindClaimStatus(claim, pv), metav1.UpdateOptions{})
	return err
}

// bindWatch records when each claim of a namespace is first seen Bound.
type bindWatch struct {
	mu     sync.Mutex
	seen   map[types.UID]time.Time
	cancel context.CancelFunc
	done   chan struct{}
}

func watchBinds(e *env) *bindWatch {
	ctx, cancel := context.WithCancel(e.ctx)
	w := &bindWatch{seen: map[types.UID]time.Time{}, cancel: cancel, done: make(chan struct{})}
	watcher, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	go func() {
		defer close(w.done)
		defer watcher.Stop()
		for ev := range watcher.ResultChan() {
			c, ok := ev.Object.(*v1.PersistentVolumeClaim)
			if !ok || c.Status.Phase != v1.ClaimBound {
				continue
			}
			w.mu.Lock()
			if _, dup := w.seen[c.UID]; !dup {
				w.seen[c.UID] = time.Now()
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *bindWatch) waitFor(b *testing.B, n int) {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		got := len(w.seen)
		w.mu.Unlock()
		if got >= n {
			w.cancel()
			<-w.done
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("only %d of %d claims Bound in 5 minutes", len(w.seen), n)
}

func (w *bindWatch) times() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]time.Time, 0, len(w.seen))
	for _, t := range w.seen {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}
