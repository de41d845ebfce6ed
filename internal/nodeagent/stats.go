package nodeagent

import (
	"context"
	"errors"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/mounting"
)

// The kubelet's volume stats, with its names and labels, plus the node
// (one agent serves several nodes; a kubelet is scraped per node).
var (
	statsLabels       = []string{"namespace", "persistentvolumeclaim", "node"}
	statsCapacity     = statsDesc("capacity_bytes", "Capacity in bytes of the volume")
	statsAvailable    = statsDesc("available_bytes", "Number of available bytes in the volume")
	statsUsed         = statsDesc("used_bytes", "Number of used bytes in the volume")
	statsInodes       = statsDesc("inodes", "Maximum number of inodes in the volume")
	statsInodesFree   = statsDesc("inodes_free", "Number of free inodes in the volume")
	statsInodesUsed   = statsDesc("inodes_used", "Number of used inodes in the volume")
	statsTimeout      = 10 * time.Second
	errStatsCollector = errors.New("node agent: volume stats collector")
)

func statsDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("kubelet_volume_stats_"+name, help, statsLabels, nil)
}

// statsCollector reports the usage of the claims published on the agent's
// nodes from the agent's cache (volumeStats), as the kubelet serves its
// cached volume stats at a scrape: no driver call at a scrape.
type statsCollector struct{ a *Agent }

func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{statsCapacity, statsAvailable, statsUsed, statsInodes, statsInodesFree, statsInodesUsed} {
		ch <- d
	}
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.a.stats.all() {
		t, u := st.target, st.usage
		gauge := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), t.Namespace, t.Claim, st.node)
		}
		gauge(statsCapacity, u.CapacityBytes)
		gauge(statsAvailable, u.AvailableBytes)
		gauge(statsUsed, u.UsedBytes)
		gauge(statsInodes, u.Inodes)
		gauge(statsInodesFree, u.InodesFree)
		gauge(statsInodesUsed, u.InodesUsed)
	}
}

// volumeStats is the cache of the claims' usage, per node, as the
// kubelet's: refreshed every Config.VolumeStatsAggPeriod (its
// volumeStatsAggPeriod), served at each scrape.
type volumeStats struct {
	mu     sync.Mutex
	byNode map[string][]cachedStats
}

type cachedStats struct {
	node   string
	target mounting.StatsTarget
	usage  mounting.Usage
}

func (v *volumeStats) all() []cachedStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []cachedStats
	for _, s := range v.byNode {
		out = append(out, s...)
	}
	return out
}

func (v *volumeStats) set(node string, s []cachedStats) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byNode == nil {
		v.byNode = map[string][]cachedStats{}
	}
	v.byNode[node] = s
}

// runVolumeProbes waits for the informers, then every
// VolumeStatsAggPeriod until ctx ends builds each node's world once and
// hands it to the stats refresh (with Config.Metrics) and the health
// probe: the kubelet's volume stats cache and volume health manager both
// run at that period.
func (a *Agent) runVolumeProbes(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), a.runner.Synced...) {
		return
	}
	wait.UntilWithContext(ctx, a.probeVolumes, a.cfg.VolumeStatsAggPeriod)
}

// probeVolumes is one pass of runVolumeProbes over every node. A node
// whose world cannot be built now has no stats and keeps its last health
// reports.
func (a *Agent) probeVolumes(ctx context.Context) {
	for _, n := range a.nodes {
		if a.down(n.name) {
			// A crashed kubelet serves no stats; its last health
			// reports stand.
			a.stats.set(n.name, nil)
			continue
		}
		n.mu.RLock()
		w, err := a.world(ctx, n)
		n.mu.RUnlock()
		if err != nil {
			klog.FromContext(ctx).V(2).Info("No volume stats or health for the node", "node", n.name, "err", err)
			a.stats.set(n.name, nil)
			continue
		}
		if a.cfg.Metrics != nil {
			a.refreshStats(ctx, n, w)
		}
		a.probeHealth(ctx, n, w)
	}
}

// refreshStats asks NodeGetVolumeStats of every claim published on the
// node and replaces its cached stats (a claim whose pod went drops out); a
// claim that cannot be asked now has none.
func (a *Agent) refreshStats(ctx context.Context, n *nodeState, w mounting.World) {
	logger := klog.FromContext(ctx)
	var out []cachedStats
	for _, t := range w.StatsTargets(n.layout) {
		u, err := a.usage(ctx, n, t)
		if err != nil {
			logger.V(2).Info("No volume stats", "node", n.name, "pvc", t.Namespace+"/"+t.Claim, "err", err)
			continue
		}
		out = append(out, cachedStats{node: n.name, target: t, usage: u})
	}
	a.stats.set(n.name, out)
}

// usage asks the driver the usage of one published volume.
func (a *Agent) usage(ctx context.Context, n *nodeState, t mounting.StatsTarget) (mounting.Usage, error) {
	e, err := n.endpoint(t.Driver)
	if err != nil {
		return mounting.Usage{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	resp, err := e.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: t.Handle, VolumePath: t.Path})
	if err != nil {
		return mounting.Usage{}, err
	}
	return mounting.UsageOf(resp)
}

// registerStats registers the volume stats on reg, replacing the
// collector of an agent this one replaces.
func registerStats(reg prometheus.Registerer, a *Agent) error {
	for _, c := range []prometheus.Collector{statsCollector{a}, &a.storage} {
		err := reg.Register(c)
		var exists prometheus.AlreadyRegisteredError
		if errors.As(err, &exists) {
			reg.Unregister(exists.ExistingCollector)
			err = reg.Register(c)
		}
		if err != nil {
			return errors.Join(errStatsCollector, err)
		}
	}
	return nil
}
