package manager

import (
	"time"

	"github.com/volplane/volplane/internal/controller/capacity"
)

// Capacity is the capacity loop's name in --controllers: the
// external-provisioner's capacity controller (--enable-capacity).
const Capacity = "capacity"

// CapacitySettings are the capacity loop's own settings.
type CapacitySettings struct {
	// Namespace holds the CSIStorageCapacity objects (the reference's
	// $NAMESPACE); "" is LeaderElectNamespace, else kube-system.
	Namespace string
	// PollInterval is --capacity-poll-interval (0: one minute).
	PollInterval time.Duration
	// Immediate is --capacity-for-immediate-binding.
	Immediate bool
	// OwnerPod, "namespace/name" of the pod the loop runs in, with
	// OwnerLevels (--capacity-ownerref-level), finds the owner of every
	// object (garbage collected with it); "": no owner.
	OwnerPod    string
	OwnerLevels int
}

// namespace is where the objects live.
func (s CapacitySettings) namespace(cfg Config) string {
	switch {
	case s.Namespace != "":
		return s.Namespace
	case cfg.LeaderElectNamespace != "":
		return cfg.LeaderElectNamespace
	}
	return "kube-system"
}

// newCapacity builds the capacity loop over the dialed drivers, sharing the
// process's in-flight accounting with the provisioner.
func newCapacity(w wiring) ([]Runnable, error) {
	cfg := w.Config
	c, err := capacity.New(capacity.Config{
		Client: w.Client, Informers: w.Informers, Pool: w.Pool, Ledger: w.Ledger,
		Namespace: cfg.Capacity.namespace(cfg), OwnerPod: cfg.Capacity.OwnerPod, OwnerLevels: cfg.Capacity.OwnerLevels, NodeName: cfg.nodeName(),
		Immediate: cfg.Capacity.Immediate, PollInterval: cfg.Capacity.PollInterval, Metrics: w.Metrics,
	})
	if err != nil {
		return nil, err
	}
	return []Runnable{c}, nil
}
