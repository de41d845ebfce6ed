package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/cluster/clustertest"
	"github.com/volplane/volplane/internal/controller/manager"
)

// `volplane controller` serves its metrics and health on the given address
// and, with leader election, runs only while holding its Lease.
func TestControllerServesMetricsAndHoldsItsLease(t *testing.T) {
	withoutSharedBinder(t)
	e := newEnv(t)
	e.createPV(e.pv("counted", "1Gi"))
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, manager.Config{
			REST: clustertest.ControlPlane(t).RESTConfig, Controllers: []string{manager.Binder},
			LeaderElect: true, LeaderElectNamespace: "kube-system", LeaderElectName: "volplane-e2e",
			MetricsAddr: "127.0.0.1:0", Ready: func(a string) { addr <- a },
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller stopped with %v", err)
		}
	}()
	base := "http://" + <-addr
	e.eventually("/readyz ok", func() string { return httpGetOK(base + "/readyz") })
	if msg := httpGetOK(base + "/healthz"); msg != "" {
		t.Errorf("/healthz: %s", msg)
	}
	body := httpGet(t, base+"/metrics")
	for _, series := range []string{
		`pv_collector_total_pv_count{plugin_name="kubernetes.io/host-path",volume_mode="Filesystem"}`,
		`pv_collector_unbound_pv_count{storage_class="` + e.class + `"}`,
		"retroactive_storageclass_total",
	} {
		if !strings.Contains(body, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	lease, err := e.client.CoordinationV1().Leases("kube-system").Get(e.ctx, "volplane-e2e", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("leader election Lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("Lease has no holder: %+v", lease.Spec)
	}
}

func httpGetOK(url string) string {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.Status + ": " + string(b)
	}
	return ""
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}
