package main

import "testing"

// up's stats and health periods default to the kubelet's
// volumeStatsAggPeriod (which also paces its health probes in 1.37) and
// the external-health-monitor's --monitor-interval; controller takes the
// monitor's too.
func TestHealthPeriodsDefaultToTheReferences(t *testing.T) {
	up, ctl := newUpCommand().Flags(), newControllerCommand().Flags()
	for _, c := range []struct {
		cmd, flag, want string
		def             string
	}{
		{"up", "volume-stats-agg-period", "1m0s", up.Lookup("volume-stats-agg-period").DefValue},
		{"up", "health-monitor-interval", "1m0s", up.Lookup("health-monitor-interval").DefValue},
		{"controller", "health-monitor-interval", "1m0s", ctl.Lookup("health-monitor-interval").DefValue},
	} {
		if c.def != c.want {
			t.Errorf("%s --%s defaults to %s, want %s", c.cmd, c.flag, c.def, c.want)
		}
	}
	if err := (upHealthFlags{statsPeriod: 0, monitorInterval: 1}).check(); err == nil {
		t.Error("a zero --volume-stats-agg-period must be refused")
	}
}
