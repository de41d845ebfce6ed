package attachdetach

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/metriclabel"
)

// metrics are the loop's series, named as kube-controller-manager names
// them.
type metrics struct {
	forcedDetaches *prometheus.CounterVec

	mu     sync.Mutex
	counts map[string]attachment.Counts // per node, from its last sync
}

var (
	descInUse = prometheus.NewDesc("storage_count_attachable_volumes_in_use",
		"Measure number of volumes in use", []string{"node", "volume_plugin"}, nil)
	descTotal = prometheus.NewDesc("attachdetach_controller_total_volumes",
		"Number of volumes in A/D Controller", []string{"plugin_name", "state"}, nil)
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		forcedDetaches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "attach_detach_controller",
			Name:      "attachdetach_controller_forced_detaches",
			Help:      "Number of times the A/D Controller performed a forced detach",
		}, []string{"reason"}),
		counts: map[string]attachment.Counts{},
	}
	for _, c := range []prometheus.Collector{m.forcedDetaches, m} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe keeps a node's counts: all of them (scope nil), or those of
// the scope's volumes; an empty node is dropped.
func (m *metrics) observe(node string, c attachment.Counts, scope map[v1.UniqueVolumeName]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if scope != nil {
		kept := m.counts[node]
		if kept == nil {
			kept = attachment.Counts{}
		}
		for u := range scope {
			if n, ok := c[u]; ok {
				kept[u] = n
			} else {
				delete(kept, u)
			}
		}
		c = kept
	}
	if len(c) == 0 {
		delete(m.counts, node)
		return
	}
	m.counts[node] = c
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- descInUse
	ch <- descTotal
}

// Collect sums the nodes' counts at scrape time. Label values come from
// objects and go through metriclabel: an invalid one must not panic a
// scrape.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	desired, actual := map[string]int{}, map[string]int{}
	type nodePlugin struct{ node, plugin string }
	inUse := map[nodePlugin]int{}
	for node, c := range m.counts {
		nodeDesired, nodeAttached, nodeInUse := c.Sum()
		for p, n := range nodeDesired {
			desired[metriclabel.Value(p)] += n
		}
		for p, n := range nodeAttached {
			actual[metriclabel.Value(p)] += n
		}
		for p, n := range nodeInUse {
			inUse[nodePlugin{metriclabel.Value(node), metriclabel.Value(p)}] += n
		}
	}
	for p, n := range desired {
		ch <- prometheus.MustNewConstMetric(descTotal, prometheus.GaugeValue, float64(n), p, "desired_state_of_world")
	}
	for p, n := range actual {
		ch <- prometheus.MustNewConstMetric(descTotal, prometheus.GaugeValue, float64(n), p, "actual_state_of_world")
	}
	for k, n := range inUse {
		ch <- prometheus.MustNewConstMetric(descInUse, prometheus.GaugeValue, float64(n), k.node, k.plugin)
	}
}
