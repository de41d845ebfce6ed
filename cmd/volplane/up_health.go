package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/volplane/volplane/internal/controller/healthmonitor"
	"github.com/volplane/volplane/internal/controller/manager"
)

// defaultVolumeStatsAggPeriod is the kubelet's volumeStatsAggPeriod
// default, which in 1.37 also paces its volume health probes.
const defaultVolumeStatsAggPeriod = time.Minute

// upHealthFlags are up's volume stats and health periods.
type upHealthFlags struct {
	statsPeriod, monitorInterval time.Duration
}

func (h *upHealthFlags) register(f *pflag.FlagSet) {
	f.DurationVar(&h.statsPeriod, "volume-stats-agg-period", defaultVolumeStatsAggPeriod,
		"how often the simulated nodes ask the drivers each published volume's usage (kubelet_volume_stats_*) and health (NodeGetVolumeHealth, NodeGetStorageHealth), as the kubelet's flag of that name")
	registerHealthMonitorInterval(f, &h.monitorInterval)
}

// registerHealthMonitorInterval is --health-monitor-interval, of up and
// controller.
func registerHealthMonitorInterval(f *pflag.FlagSet, d *time.Duration) {
	f.DurationVar(d, "health-monitor-interval", healthmonitor.DefaultInterval,
		"how often the health-monitor loop asks the CSI controllers their volumes' health (the external-health-monitor's --monitor-interval)")
}

func (h upHealthFlags) check() error {
	if h.statsPeriod <= 0 || h.monitorInterval <= 0 {
		return fmt.Errorf("--volume-stats-agg-period %s and --health-monitor-interval %s: want positive durations such as 1m", h.statsPeriod, h.monitorInterval)
	}
	return nil
}

// apply sets the periods on the manager's config (and its node agent).
func (h upHealthFlags) apply(cfg *manager.Config) {
	cfg.HealthMonitorInterval = h.monitorInterval
	if cfg.NodeAgent != nil {
		cfg.NodeAgent.VolumeStatsAggPeriod = h.statsPeriod
	}
}
