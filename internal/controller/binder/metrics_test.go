package binder

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// A StorageClass name that is not valid UTF-8 (an annotation written through
// protobuf, or a provisioner name) reaches the label values of the
// pv_collector gauges and of the operation metrics. The Prometheus client
// panics on such a value, which during a scrape kills the whole process;
// /metrics must instead answer, with the value made valid.
func TestScrapeSurvivesLabelValuesThatAreNotUTF8(t *testing.T) {
	bad := "fast\xff\xfe"
	pvs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	annotated := metav1.ObjectMeta{Annotations: map[string]string{v1.BetaStorageClassAnnotation: bad}}
	pv := &v1.PersistentVolume{ObjectMeta: *annotated.DeepCopy(), Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "drv\xc3"}}}}
	pv.Name = "pv"
	claim := &v1.PersistentVolumeClaim{ObjectMeta: *annotated.DeepCopy()}
	claim.Name, claim.Namespace = "c", "ns"
	// Another invalid class that becomes the same valid value: counted with
	// the first, not a second series of the same labels (which fails Gather).
	other := claim.DeepCopy()
	other.Name, other.Annotations[v1.BetaStorageClassAnnotation] = "d", "fast\xfe"
	if err := pvs.Add(pv); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*v1.PersistentVolumeClaim{claim, other} {
		if err := claims.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, corelisters.NewPersistentVolumeLister(pvs), corelisters.NewPersistentVolumeClaimLister(claims))
	if err != nil {
		t.Fatal(err)
	}
	ops := newOperations(m, clock.RealClock{})
	ops.start("pv", "provisioner\xff", opDelete)
	ops.failed("pv")
	ops.done("pv")

	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics answered %d:\n%s", rec.Code, body)
	}
	for _, want := range []string{
		`pv_collector_unbound_pv_count{storage_class="fast�"}`,
		`pv_collector_total_pv_count{plugin_name="kubernetes.io/csi:drv�",volume_mode="Filesystem"}`,
		`pv_collector_unbound_pvc_count{namespace="ns",storage_class="fast�",volume_attributes_class=""} 2`,
		`volume_operation_total_errors{operation_name="delete",plugin_name="provisioner�"} 1`,
		`volume_operation_total_seconds_count{operation_name="delete",plugin_name="provisioner�"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}
