package healthmonitor

import (
	"context"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/health"
	"github.com/volplane/volplane/internal/provisioning"
)

// Monitor is the health-monitor loop.
type Monitor struct {
	cfg     Config
	volumes corelisters.PersistentVolumeLister
	claims  corelisters.PersistentVolumeClaimLister
	synced  []cache.InformerSynced
	ready   atomic.Bool

	// reported is, per claim UID, the conditions last reported on it (by
	// event or status); a claim absent is healthy.
	mu       sync.Mutex
	reported map[types.UID][]v1.VolumeHealthCondition
}

// New registers the loop's informers; they must not be started yet.
func New(cfg Config) (*Monitor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	pvs, pvcs := cfg.Informers.Core().V1().PersistentVolumes(), cfg.Informers.Core().V1().PersistentVolumeClaims()
	return &Monitor{
		cfg: cfg, volumes: pvs.Lister(), claims: pvcs.Lister(),
		synced:   []cache.InformerSynced{pvs.Informer().HasSynced, pvcs.Informer().HasSynced},
		reported: map[types.UID][]v1.VolumeHealthCondition{},
	}, nil
}

// Ready says the caches synced and polling began.
func (m *Monitor) Ready() bool { return m.ready.Load() }

// Run polls every Interval until ctx ends.
func (m *Monitor) Run(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), m.synced...) {
		return nil // stopped before the caches synced: a normal shutdown
	}
	m.ready.Store(true)
	wait.UntilWithContext(ctx, m.Poll, m.cfg.Interval)
	return nil
}

// Poll asks every driver once and reports on every bound claim.
func (m *Monitor) Poll(ctx context.Context) {
	logger := klog.FromContext(ctx)
	pvs, err := m.volumes.List(labels.Everything())
	if err != nil {
		logger.Error(err, "List volumes")
		return
	}
	byEndpoint := map[*csi.Endpoint][]*v1.PersistentVolume{}
	seen := map[types.UID]bool{} // claims still monitored: their memory stays
	for _, pv := range pvs {
		if pv.Spec.CSI == nil || pv.Spec.ClaimRef == nil || !m.holds(pv) {
			continue
		}
		e, err := m.cfg.Pool.ForVolume(pv.Spec.CSI.Driver, pv)
		if err != nil || !e.Info.Controller || !e.Info.VolumeHealth {
			continue
		}
		byEndpoint[e] = append(byEndpoint[e], pv)
		seen[pv.Spec.ClaimRef.UID] = true
	}
	for e, pvs := range byEndpoint {
		for pv, conds := range m.ask(ctx, e, pvs) {
			m.report(ctx, pv, conds)
		}
	}
	m.forgetOthers(seen)
}

// ask is the conditions of each of pvs the endpoint answered for: one
// listing when it offers ControllerListVolumeHealth (a volume it does not
// list is healthy), else one get per volume. A volume whose answer failed
// is left out: its last report stands, as the reference leaves it.
func (m *Monitor) ask(ctx context.Context, e *csi.Endpoint, pvs []*v1.PersistentVolume) map[*v1.PersistentVolume][]v1.VolumeHealthCondition {
	logger := klog.FromContext(ctx)
	out := map[*v1.PersistentVolume][]v1.VolumeHealthCondition{}
	if e.Info.ListVolumeHealth {
		listed, err := e.ControllerListVolumeHealth(ctx)
		if err != nil {
			logger.V(2).Info("ControllerListVolumeHealth failed", "driver", e.Info.Driver, "err", err)
			return out
		}
		byID := map[string][]v1.VolumeHealthCondition{}
		for _, h := range listed {
			byID[h.GetVolumeId()] = health.VolumeConditions(h)
		}
		for _, pv := range pvs {
			out[pv] = byID[pv.Spec.CSI.VolumeHandle]
		}
		return out
	}
	for _, pv := range pvs {
		h, err := e.ControllerGetVolumeHealth(ctx, pv.Spec.CSI.VolumeHandle)
		if err != nil {
			logger.V(2).Info("ControllerGetVolumeHealth failed", "pv", pv.Name, "err", err)
			continue
		}
		out[pv] = health.VolumeConditions(h)
	}
	return out
}

// holds says whether the loop monitors pv's volume: one of a driver in the
// pool and, in node deployment, one this node's driver holds.
func (m *Monitor) holds(pv *v1.PersistentVolume) bool {
	info, served := m.cfg.Pool.Info(pv.Spec.CSI.Driver)
	if !served || m.cfg.NodeName == "" {
		return served
	}
	return provisioning.ForVolume(provisioning.Local{Node: m.cfg.NodeName, Topology: info.Topology}, pv).Ours
}
