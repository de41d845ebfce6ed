package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/volplane/volplane/deploy"
	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/test/e2e/support"
)

const ns = "dash"

// Every metric the dashboard reads is one a running volplane serves, but
// deploy.DashboardRareMetrics (a key stuck for five minutes), which
// TestStuckKeyMetrics checks.
func TestDashboardMetricsAreServed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var addr string
	select {
	case addr = <-metricsAddr:
	case <-ctx.Done():
		t.Fatal("the loops never said where they serve /metrics")
	}
	c := stack.CP.Client
	work(ctx, t, c)

	var missing []string
	// The work is done: what is not served within a few scrapes is not
	// served at all.
	ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := stack.EndedEarly(); err != nil {
			return false, err
		}
		series, err := scrape(ctx, "http://"+addr+"/metrics")
		if err != nil {
			return false, err
		}
		all, err := deploy.MissingMetrics(series)
		missing = slices.DeleteFunc(all, func(m string) bool {
			name, _, _ := strings.Cut(m, "{")
			_, rare := deploy.DashboardRareMetrics[name]
			return rare
		})
		return len(missing) == 0, err
	})
	if err != nil {
		t.Fatalf("the dashboard reads metrics volplane does not serve: %v (%v)", missing, err)
	}
}

// work makes every metric the dashboard reads appear: a claim provisioned
// and bound, a network volume attached to a pod and grown, a provisioning
// the driver refuses (too big: OutOfRange), an available volume, and a
// Delete volume no one can delete (it goes Failed).
func work(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	must(t, create(ctx, c.CoreV1().Namespaces(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	bound := support.Claim(ns, "bound", bundle.ImmediateClass, "1Gi")
	network := support.Claim(ns, "network", bundle.NetworkClass, "1Gi")
	refused := support.Claim(ns, "refused", bundle.ImmediateClass, "1Ei")
	for _, claim := range []*corev1.PersistentVolumeClaim{bound, network, refused} {
		must(t, create(ctx, c.CoreV1().PersistentVolumeClaims(ns), claim))
	}
	must(t, create(ctx, c.CoreV1().Pods(ns), support.Pod(ns, "user", stack.CP.Nodes[0], "network")))
	must(t, create(ctx, c.CoreV1().PersistentVolumes(), static("dash-available", "")))
	must(t, create(ctx, c.CoreV1().PersistentVolumes(), static("dash-undeletable", "undeletable")))
	must(t, create(ctx, c.CoreV1().PersistentVolumeClaims(ns), support.Claim(ns, "undeletable", "dash-static", "1Gi",
		func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeName = "dash-undeletable" })))

	waitFor(ctx, t, "claims bound and the pod running", func() (bool, error) {
		for _, name := range []string{"bound", "network", "undeletable"} {
			pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || pvc.Status.Phase != corev1.ClaimBound {
				return false, err
			}
		}
		pod, err := c.CoreV1().Pods(ns).Get(ctx, "user", metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning, err
	})
	// Grown while attached and in use.
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "network", metav1.GetOptions{})
		if err != nil {
			return err
		}
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		_, err = c.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{})
		return err
	}))
	must(t, c.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "undeletable", metav1.DeleteOptions{}))
	waitFor(ctx, t, "the network volume grown and the undeletable volume Failed", func() (bool, error) {
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "network", metav1.GetOptions{})
		if err != nil || pvc.Status.Capacity.Storage().Cmp(resource.MustParse("2Gi")) < 0 {
			return false, err
		}
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, "dash-undeletable", metav1.GetOptions{})
		return err == nil && pv.Status.Phase == corev1.VolumeFailed, err
	})
}

// static is a hostPath volume of class dash-static with reclaim policy
// Delete, which no driver here deletes; claim "" leaves it available.
func static(name, claim string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              "dash-static",
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
		},
	}
	if claim != "" {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ns, Name: claim}
	}
	return pv
}

// The stuck-key metrics the dashboard reads are the ones a loop registers
// when it gives a key up: a real loop.Runner whose sync gives up at once.
func TestStuckKeyMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	q := loop.NewQueue("dash", time.Millisecond, time.Second)
	r := &loop.Runner{Name: "Dashboard", Workers: 1, Metrics: reg, Queues: []loop.Queue{{Q: q,
		Sync: func(context.Context, string) (loop.Result, error) {
			return loop.Terminal(errors.New("given up")), nil
		}}}}
	done := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() { done <- r.Run(runCtx) }()
	defer func() { stop(); <-done }()
	q.Add("key")
	waitFor(ctx, t, "the stuck-key metrics", func() (bool, error) {
		families, err := reg.Gather()
		if err != nil {
			return false, err
		}
		missing, err := deploy.MissingMetrics(deploy.SeriesOf(families))
		for _, m := range missing {
			if name, _, _ := strings.Cut(m, "{"); deploy.DashboardRareMetrics[name] != "" {
				return false, err
			}
		}
		return true, err
	})
}

func scrape(ctx context.Context, url string) (deploy.Series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return deploy.ScrapedSeries(resp.Body)
}

func waitFor(ctx context.Context, t *testing.T, what string, done func() (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		if err := stack.EndedEarly(); err != nil {
			return false, err
		}
		return done()
	}); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func create[T any](ctx context.Context, api interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
}, obj T) error {
	_, err := api.Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
