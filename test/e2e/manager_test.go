package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/manager"
)

// `volplane controller` serves its metrics and health on the given address
// and, with leader election, runs only while holding its Lease.
func TestControllerServesMetricsAndHoldsItsLease(t *testing.T) {
	withoutSharedBinder(t)
	e := newEnv(t)
	e.createPV(e.pv("counted", "1Gi"))
	base := runManager(t, manager.Config{
		LeaderElect: true, LeaderElectNamespace: "kube-system", LeaderElectName: "volplane-e2e",
		MetricsAddr: "127.0.0.1:0",
	})
	// A standby is ready too: wait until this replica leads.
	e.eventually("leading, /readyz ok", func() string {
		if !strings.Contains(httpGet(t, base+"/metrics"), "\nvolplane_leading 1\n") {
			return "volplane_leading is not 1"
		}
		return httpGetOK(base + "/readyz")
	})
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

// The binder times what it hands off, under the reference's metric names:
// a provisioning from the ExternalProvisioning hand-off until the claim is
// bound, and it counts a deletion no one here can perform as an error.
func TestOperationMetricsTimeHandOffsAndCountFailedDeletes(t *testing.T) {
	withoutSharedBinder(t)
	e := newEnv(t)
	base := runManager(t, manager.Config{Workers: 2, ResyncPeriod: 2 * time.Second, MetricsAddr: "127.0.0.1:0"})

	class := e.createClass(e.ns+"-ext", "example.com/external", storagev1.VolumeBindingImmediate, false)
	e.createClaim(e.claim("handed-off", "1Gi", claimClass(class.Name)))
	e.waitClaimEvent("handed-off", v1.EventTypeNormal, binding.EventExternalProvisioning,
		binding.MsgExternalProvisioning("example.com/external"))
	pv := e.createPV(e.pv("made-outside", "1Gi", pvClass(class.Name)))
	e.waitBound("handed-off", pv.Name)

	e.bindAndReleaseForMetrics()
	want := []string{
		`volume_operation_total_seconds_count{operation_name="provision",plugin_name="example.com/external"} 1`,
		`volume_operation_total_errors{operation_name="delete",plugin_name="N/A"} 1`,
	}
	e.eventually("operation metrics", func() string {
		body := httpGet(t, base+"/metrics")
		for _, series := range want {
			if !strings.Contains(body, series) {
				return "/metrics lacks " + series
			}
		}
		return ""
	})
}

// bindAndReleaseForMetrics releases a hostPath PV under Delete, which no
// one here can delete: the PV goes Failed.
func (e *env) bindAndReleaseForMetrics() {
	e.t.Helper()
	pv, _ := bindAndRelease(e, e.pv("undeletable", "1Gi", pvPolicy(v1.PersistentVolumeReclaimDelete)))
	e.waitPVPhase(pv.Name, v1.VolumeFailed)
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
