package binder

import (
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/metriclabel"
)

// metrics are the binder's Prometheus series, named as kube-controller-manager
// names them so existing dashboards keep working; volplane's own are
// prefixed volplane_.
type metrics struct {
	// resyncs counts the safety net's passes: a claim not at rest is synced
	// again within two passes of its last sync.
	resyncs           prometheus.Counter
	retroactive       prometheus.Counter
	retroactiveErrors prometheus.Counter
	operationErrors   *prometheus.CounterVec
	operationSeconds  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer, pvs corelisters.PersistentVolumeLister, claims corelisters.PersistentVolumeClaimLister) (*metrics, error) {
	m := &metrics{
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "volplane_binder_resyncs_total",
			Help: "Resync passes of the binder, each re-queuing the claims and volumes not at rest that were not synced within the resync period",
		}),
		retroactive: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "retroactive_storageclass_total",
			Help: "Total number of retroactive StorageClass assignments to persistent volume claims",
		}),
		retroactiveErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "retroactive_storageclass_errors_total",
			Help: "Total number of failed retroactive StorageClass assignments to persistent volume claims",
		}),
		operationErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "volume_operation_total_errors",
			Help: "Total volume operation errors",
		}, []string{"plugin_name", "operation_name"}),
		operationSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "volume_operation_total_seconds",
			Help:    "Total volume operation time",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600},
		}, []string{"plugin_name", "operation_name"}),
	}
	for _, c := range []prometheus.Collector{m.resyncs, m.retroactive, m.retroactiveErrors, m.operationErrors,
		m.operationSeconds, &collector{pvs: pvs, claims: claims}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

var (
	descTotalPV = prometheus.NewDesc("pv_collector_total_pv_count",
		"Gauge measuring total number of persistent volumes", []string{"plugin_name", "volume_mode"}, nil)
	descBoundPV = prometheus.NewDesc("pv_collector_bound_pv_count",
		"Gauge measuring number of persistent volume currently bound", []string{"storage_class"}, nil)
	descUnboundPV = prometheus.NewDesc("pv_collector_unbound_pv_count",
		"Gauge measuring number of persistent volume currently unbound", []string{"storage_class"}, nil)
	claimLabels  = []string{"namespace", "storage_class", "volume_attributes_class"}
	descBoundPVC = prometheus.NewDesc("pv_collector_bound_pvc_count",
		"Gauge measuring number of persistent volume claim currently bound", claimLabels, nil)
	descUnboundPVC = prometheus.NewDesc("pv_collector_unbound_pvc_count",
		"Gauge measuring number of persistent volume claim currently unbound", claimLabels, nil)
)

// collector computes the pv_collector gauges from the informer caches at
// scrape time, so they cost nothing between scrapes. Every label value comes
// from an object and goes through metriclabel before it is counted (two
// values made equal must add up, not collide): MustNewConstMetric panics on
// invalid UTF-8, and here that would kill the process during a scrape.
type collector struct {
	pvs    corelisters.PersistentVolumeLister
	claims corelisters.PersistentVolumeClaimLister
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTotalPV, descBoundPV, descUnboundPV, descBoundPVC, descUnboundPVC} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.collectVolumes(ch)
	c.collectClaims(ch)
}

func (c *collector) collectVolumes(ch chan<- prometheus.Metric) {
	pvs, err := c.pvs.List(labels.Everything())
	if err != nil {
		return
	}
	total := map[[2]string]float64{}
	bound, unbound := map[string]float64{}, map[string]float64{}
	for _, pv := range pvs {
		total[[2]string{metriclabel.Value(pluginName(pv)), string(binding.VolumeMode(pv))}]++
		class := metriclabel.Value(binding.VolumeClass(pv))
		if pv.Status.Phase == v1.VolumeBound {
			bound[class]++
		} else {
			unbound[class]++
		}
	}
	for k, n := range total {
		ch <- prometheus.MustNewConstMetric(descTotalPV, prometheus.GaugeValue, n, k[0], k[1])
	}
	for class, n := range bound {
		ch <- prometheus.MustNewConstMetric(descBoundPV, prometheus.GaugeValue, n, class)
	}
	for class, n := range unbound {
		ch <- prometheus.MustNewConstMetric(descUnboundPV, prometheus.GaugeValue, n, class)
	}
}

func (c *collector) collectClaims(ch chan<- prometheus.Metric) {
	claims, err := c.claims.List(labels.Everything())
	if err != nil {
		return
	}
	bound, unbound := map[[3]string]float64{}, map[[3]string]float64{}
	for _, claim := range claims {
		vac := ""
		if claim.Spec.VolumeAttributesClassName != nil {
			vac = *claim.Spec.VolumeAttributesClassName
		}
		k := [3]string{claim.Namespace, metriclabel.Value(binding.ClaimClass(claim)), metriclabel.Value(vac)}
		if claim.Status.Phase == v1.ClaimBound {
			bound[k]++
		} else {
			unbound[k]++
		}
	}
	for k, n := range bound {
		ch <- prometheus.MustNewConstMetric(descBoundPVC, prometheus.GaugeValue, n, k[0], k[1], k[2])
	}
	for k, n := range unbound {
		ch <- prometheus.MustNewConstMetric(descUnboundPVC, prometheus.GaugeValue, n, k[0], k[1], k[2])
	}
}

// pluginName names a PV's volume plugin the way kube-controller-manager's
// plugin manager does, for the plugin_name label.
func pluginName(pv *v1.PersistentVolume) string {
	s := pv.Spec.PersistentVolumeSource
	switch {
	case s.CSI != nil:
		return "kubernetes.io/csi:" + s.CSI.Driver
	case s.HostPath != nil:
		return "kubernetes.io/host-path"
	case s.NFS != nil:
		return "kubernetes.io/nfs"
	case s.Local != nil:
		return "kubernetes.io/local-volume"
	case s.ISCSI != nil:
		return "kubernetes.io/iscsi"
	case s.FC != nil:
		return "kubernetes.io/fc"
	}
	return "N/A"
}
