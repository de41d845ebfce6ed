package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/volume/pvcprotection"
	"k8s.io/kubernetes/pkg/controller/volume/pvprotection"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/controller/protection"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
)

const (
	benchClass = "bench-delete"
)

// runCase sets up a fresh control plane with n claims, deletes every claim,
// starts the protection loops under test and measures until all is gone.
func runCase(b *testing.B, scenario string, unthrottled bool, impl string, n int) (result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "vp-bench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	cp, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Nodes: 1, UnsafeNoFsync: true})
	if err != nil {
		return result{}, err
	}
	defer cp.Stop()
	admin := protobuf(cp.RESTConfig, -1)
	client := kubernetes.NewForConfigOrDie(admin)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}, metav1.CreateOptions{}); err != nil {
		return result{}, err
	}
	class := "no-such-class"
	if scenario == "pairs" {
		class = benchClass
		if err := startBinderAndProvisioner(ctx, b, cp, admin); err != nil {
			return result{}, err
		}
	}
	if err := parallel(n, func(i int) error { return createClaim(ctx, client, i, class) }); err != nil {
		return result{}, err
	}
	if scenario == "pairs" {
		if err := waitFor(ctx, 10*time.Minute, func() (bool, error) { return allBound(ctx, client, n) }); err != nil {
			return result{}, fmt.Errorf("binding: %w", err)
		}
	}
	// Every claim is deleted before the loops under test start, so the
	// time measured is theirs, not the benchmark's own deletes: they start
	// with the whole backlog, as after a restart or a bulk delete.
	claims := client.CoreV1().PersistentVolumeClaims(benchNS)
	if err := parallel(n, func(i int) error { return claims.Delete(ctx, claimName(i), metav1.DeleteOptions{}) }); err != nil {
		return result{}, err
	}
	var requests counter
	qps := float32(20)
	if unthrottled {
		qps = -1
	}
	rc := protobuf(cp.RESTConfig, qps)
	rc.Wrap(requests.wrap)
	began := time.Now()
	if impl == implCeiling {
		go func() { _ = removeFinalizers(ctx, rc, n) }()
	} else if err := startProtection(ctx, rc, impl == implReference); err != nil {
		return result{}, err
	}
	if err := waitFor(ctx, 30*time.Minute, func() (bool, error) { return allGone(ctx, client, scenario == "pairs") }); err != nil {
		return result{}, fmt.Errorf("deletion: %w", err)
	}
	total, byVerb := requests.snapshot()
	return result{Seconds: time.Since(began).Seconds(), Requests: total, ByVerb: byVerb}, nil
}

// removeFinalizers is the ceiling: the least any pvc-protection loop must
// do for n unused claims being deleted, one finalizer-removing PATCH each,
// from 16 writers that know the names and read nothing.
func removeFinalizers(ctx context.Context, rc *rest.Config, n int) error {
	claims := kubernetes.NewForConfigOrDie(rc).CoreV1().PersistentVolumeClaims(benchNS)
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	return parallel(n, func(i int) error {
		_, err := claims.Patch(ctx, claimName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// protobuf is a copy of rc speaking protobuf, as kube-controller-manager and
// volplane do, limited to qps (burst 30) or unthrottled (qps < 0).
func protobuf(rc *rest.Config, qps float32) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.QPS, rc.Burst = qps, 30
	if qps < 0 {
		rc.Burst = 0
	}
	return rc
}

func startBinderAndProvisioner(ctx context.Context, b *testing.B, cp *cluster.ControlPlane, admin *rest.Config) error {
	endpoint := hostpathtest.Serve(b, cp.Nodes[0], 1<<50)
	client := kubernetes.NewForConfigOrDie(admin)
	driver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: hostpath.DriverName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	if _, err := client.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{}); err != nil {
		return err
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: benchClass}, Provisioner: hostpath.DriverName,
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete), VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		return err
	}
	go func() {
		err := manager.Run(ctx, manager.Config{REST: admin, Controllers: []string{manager.Binder, manager.Provisioner},
			CSIEndpoints: []string{endpoint}, Workers: 8, ResyncPeriod: 15 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, "binder and provisioner:", err)
		}
	}()
	return nil
}

// startProtection starts the loops under test and returns once their
// caches are synced.
func startProtection(ctx context.Context, rc *rest.Config, reference bool) error {
	client := kubernetes.NewForConfigOrDie(rc)
	factory := informers.NewSharedInformerFactory(client, 0)
	if reference {
		logger := klog.FromContext(ctx)
		pvc, err := pvcprotection.NewPVCProtectionController(logger, factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().Pods(), client)
		if err != nil {
			return err
		}
		pv, err := pvprotection.NewPVProtectionController(logger, factory.Core().V1().PersistentVolumes(), client)
		if err != nil {
			return err
		}
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		go pvc.Run(ctx, 1) // kube-controller-manager's worker count
		go pv.Run(ctx, 1)
		return nil
	}
	cfg := protection.Config{Client: client, Informers: factory, Workers: benchWorkers(), ResyncPeriod: 15 * time.Second}
	c, err := protection.NewClaimLoop(cfg)
	if err != nil {
		return err
	}
	v, err := protection.NewVolumeLoop(cfg)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go func() { _ = c.Run(ctx) }()
	go func() { _ = v.Run(ctx) }()
	return waitFor(ctx, time.Minute, func() (bool, error) { return c.Ready() && v.Ready(), nil })
}

func createClaim(ctx context.Context, client kubernetes.Interface, i int, class string) error {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claimName(i), Namespace: benchNS},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}
	_, err := client.CoreV1().PersistentVolumeClaims(benchNS).Create(ctx, c, metav1.CreateOptions{})
	return err
}

func allBound(ctx context.Context, client kubernetes.Interface, n int) (bool, error) {
	list, err := client.CoreV1().PersistentVolumeClaims(benchNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	bound := 0
	for _, c := range list.Items {
		if c.Status.Phase == corev1.ClaimBound {
			bound++
		}
	}
	return bound == n, nil
}

func allGone(ctx context.Context, client kubernetes.Interface, pvsToo bool) (bool, error) {
	claims, err := client.CoreV1().PersistentVolumeClaims(benchNS).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(claims.Items) > 0 || !pvsToo {
		return err == nil && len(claims.Items) == 0, err
	}
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{Limit: 1})
	return err == nil && len(pvs.Items) == 0, err
}

// parallel runs f(0..n-1) from the bench's writers and returns the first error.
func parallel(n int, f func(int) error) error {
	return forEach(context.Background(), n, func() {}, f)
}

func waitFor(ctx context.Context, limit time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done within %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// counter counts the API requests of one client, watches excluded.
type counter struct {
	mu     sync.Mutex
	byVerb map[string]int64
	total  atomic.Int64
}

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.URL.Query().Get("watch") != "true" {
			verb := req.Method
			if strings.HasSuffix(req.URL.Path, "/pods") {
				verb += " pods"
			}
			c.mu.Lock()
			if c.byVerb == nil {
				c.byVerb = map[string]int64{}
			}
			c.byVerb[verb]++
			c.mu.Unlock()
			c.total.Add(1)
		}
		return rt.RoundTrip(req)
	})
}

func (c *counter) snapshot() (int64, map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for k, v := range c.byVerb {
		out[k] = v
	}
	return c.total.Load(), out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
