package loop

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// queueDepths is the volplane_loop_queue_depth gauge of one registry: at
// each scrape, the keys waiting in the queues of every runner running with
// that registry, summed per loop. A stopped runner is no longer counted.
type queueDepths struct {
	desc *prometheus.Desc

	mu      sync.Mutex
	runners map[*Runner]struct{}
}

func newQueueDepths() *queueDepths {
	return &queueDepths{
		desc: prometheus.NewDesc("volplane_loop_queue_depth",
			"Keys waiting in the loop's work queues (not counting those being synced or waiting out a retry backoff).",
			[]string{"loop"}, nil),
		runners: map[*Runner]struct{}{},
	}
}

func (d *queueDepths) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d *queueDepths) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sums := map[string]int{}
	for r := range d.runners {
		for _, q := range r.Queues {
			sums[r.Name] += q.Q.Len()
		}
	}
	for loop, n := range sums {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(n), loop)
	}
}

// track counts r's queues until the returned func is called.
func (d *queueDepths) track(r *Runner) (untrack func()) {
	d.mu.Lock()
	d.runners[r] = struct{}{}
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		delete(d.runners, r)
		d.mu.Unlock()
	}
}

// newSyncCounts is volplane_loop_syncs_total: the syncs each loop ran,
// failed ones included. Divided by the work done (binds, attaches), it
// tells how many looks each piece of work took.
func newSyncCounts() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "volplane_loop_syncs_total",
		Help: "Syncs the loop ran (one key each), failed ones included.",
	}, []string{"loop"})
}
