package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
)

const (
	benchNS = "bench"
	// staticClass has no provisioner: its claims bind to the PVs made for them.
	staticClass = "bench-static"
	// writers is how many goroutines create the workload.
	writers = 32
)

// workload writes the objects of a scenario; writes counts its own writes
// to PVs and claims, so they can be told apart from the controller's.
type workload struct {
	client kubernetes.Interface
	writes atomic.Int64
}

func claimName(i int) string  { return fmt.Sprintf("c-%06d", i) }
func volumeName(i int) string { return fmt.Sprintf("pv-%06d", i) }

// prepare creates the namespace and the class the scenario's claims use.
func (w *workload) prepare(ctx context.Context, scenario string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}
	if _, err := w.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", benchNS, err)
	}
	if needsDrivers(scenario) {
		return bundle.Register(ctx, w.client)
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: staticClass},
		Provisioner:       "kubernetes.io/no-provisioner",
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimRetain),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	if _, err := w.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating class %s: %w", staticClass, err)
	}
	return nil
}

// classOf is the class a scenario's claims ask for.
func classOf(scenario string) string {
	if scenario == Dynamic || scenario == Churn {
		return bundle.ImmediateClass
	}
	return staticClass
}

func (w *workload) createClaim(ctx context.Context, scenario string, i int) error {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claimName(i), Namespace: benchNS},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(classOf(scenario)),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}
	_, err := w.client.CoreV1().PersistentVolumeClaims(benchNS).Create(ctx, c, metav1.CreateOptions{})
	w.writes.Add(1)
	return err
}

// createVolume creates a free static PV; any of the claims fits it.
func (w *workload) createVolume(ctx context.Context, i int) error {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: volumeName(i)},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: staticClass,
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "bench.volplane.io", VolumeHandle: volumeName(i)}}}}
	_, err := w.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	w.writes.Add(1)
	return err
}

func (w *workload) deleteClaim(ctx context.Context, i int) error {
	err := w.client.CoreV1().PersistentVolumeClaims(benchNS).Delete(ctx, claimName(i), metav1.DeleteOptions{})
	w.writes.Add(1)
	return err
}

// timed runs f(0..n-1) as forEach does and returns, by claim name, when
// each f(i) began: the clock of pair i starts as its first write is sent.
func timed(ctx context.Context, n int, f func(int) error) (map[string]time.Time, error) {
	var mu sync.Mutex
	sent := make(map[string]time.Time, n)
	err := forEach(ctx, n, func() {}, func(i int) error {
		now := time.Now()
		mu.Lock()
		sent[claimName(i)] = now
		mu.Unlock()
		return f(i)
	})
	return sent, err
}

// forEach runs f(0..n-1) from the workload's writers, stops at the first
// error and calls tick after each success.
func forEach(ctx context.Context, n int, tick func(), f func(int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	jobs := make(chan int)
	for range writers {
		wg.Go(func() {
			for i := range jobs {
				if err := f(i); err != nil {
					once.Do(func() { first = err; cancel() })
					continue
				}
				tick()
			}
		})
	}
feed:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}

// trickle creates the PVs one by one at rate per second and returns their
// creation times, in order.
func (w *workload) trickle(ctx context.Context, n int, rate float64) ([]time.Time, error) {
	created := make([]time.Time, 0, n)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i := range n {
		select {
		case <-ctx.Done():
			return created, ctx.Err()
		case <-tick.C:
		}
		created = append(created, time.Now())
		if err := w.createVolume(ctx, i); err != nil {
			return created, fmt.Errorf("creating %s: %w", volumeName(i), err)
		}
	}
	return created, nil
}

// churn creates n claims from `writers` loops, each creating a claim,
// waiting until it is Bound and deleting it, so that binds, provisioning,
// release and deletion all run at once. It returns each claim's creation time.
func (w *workload) churn(ctx context.Context, n int, watch *bindWatch) (map[string]time.Time, error) {
	var mu sync.Mutex
	created := map[string]time.Time{}
	err := forEach(ctx, n, func() {}, func(i int) error {
		mu.Lock()
		created[claimName(i)] = time.Now()
		mu.Unlock()
		if err := w.createClaim(ctx, Churn, i); err != nil {
			return fmt.Errorf("creating %s: %w", claimName(i), err)
		}
		if err := watch.waitBound(ctx, claimName(i)); err != nil {
			return err
		}
		return w.deleteClaim(ctx, i)
	})
	return created, err
}
