package manager

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	// Owner, if set, owns every object (garbage collected with it).
	Owner *metav1.OwnerReference
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
		Namespace: cfg.Capacity.namespace(cfg), Owner: cfg.Capacity.Owner, NodeName: cfg.nodeName(),
		Immediate: cfg.Capacity.Immediate, PollInterval: cfg.Capacity.PollInterval, Metrics: w.Metrics,
	})
	if err != nil {
		return nil, err
	}
	return []Runnable{c}, nil
}
