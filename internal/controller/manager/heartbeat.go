package manager

import (
	"context"
	"fmt"
	"os"

	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/controller/heartbeats"
	"github.com/volplane/volplane/internal/heartbeat"
)

// heartbeatNamespace holds the heartbeat Leases of the provisioner and the
// snapshotter: the leader election's namespace, also when election is off
// (node deployment, up).
func (c Config) heartbeatNamespace() string {
	if c.LeaderElectNamespace == "" {
		return DefaultConfig().LeaderElectNamespace
	}
	return c.LeaderElectNamespace
}

// newHeartbeat keeps a heartbeat Lease of role for every driver given (the
// drivers the row serves), one per node in node deployment, while the
// loops run (so, with leader election, only on the leader). It writes
// through a client of its own: a burst of binds must not delay a renewal.
// No driver: nothing to beat for, nil.
func newHeartbeat(cfg Config, role heartbeat.Role, drivers []string) (Runnable, error) {
	if len(drivers) == 0 {
		return nil, nil
	}
	client, err := coordinationv1client.NewForConfig(rest.CopyConfig(cfg.REST))
	if err != nil {
		return nil, fmt.Errorf("heartbeat client: %w", err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "volplane"
	}
	hb := heartbeats.Config{
		Namespace: cfg.heartbeatNamespace(), Node: cfg.nodeName(), Identity: host, Period: cfg.HeartbeatPeriod,
	}
	switch role {
	case heartbeat.Snapshotter:
		hb.Snapshotters = drivers
	default:
		hb.Provisioners = drivers
	}
	if err := hb.Validate(); err != nil {
		return nil, err
	}
	return runFunc(func(ctx context.Context) error { return heartbeats.Run(ctx, client, hb) }), nil
}
