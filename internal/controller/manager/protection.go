package manager

import (
	"github.com/volplane/volplane/internal/controller/protection"
	"github.com/volplane/volplane/internal/features"
)

// protectionConfig is what both protection loops take.
func protectionConfig(w wiring) protection.Config {
	return protection.Config{Client: w.Client, Informers: w.Informers, Metrics: w.Metrics,
		Workers: w.Config.Workers, ResyncPeriod: w.Config.ResyncPeriod,
		TrackUnused: w.Config.Gates().Enabled(features.PersistentVolumeClaimUnusedSinceTime)}
}

// newClaimProtection builds kube-controller-manager's pvc-protection.
func newClaimProtection(w wiring) ([]Runnable, error) {
	c, err := protection.NewClaimLoop(protectionConfig(w))
	if err != nil {
		return nil, err
	}
	return []Runnable{c}, nil
}

// newVolumeProtection builds kube-controller-manager's pv-protection.
func newVolumeProtection(w wiring) ([]Runnable, error) {
	v, err := protection.NewVolumeLoop(protectionConfig(w))
	if err != nil {
		return nil, err
	}
	return []Runnable{v}, nil
}
