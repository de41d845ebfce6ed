package manager

import (
	"slices"

	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/provisioner"
	"github.com/volplane/volplane/internal/heartbeat"
)

// newProvisioner builds the provisioner (the external-provisioner's role)
// over the dialed drivers, each with its own event source, and the
// heartbeat that says it runs.
func newProvisioner(w wiring) ([]Runnable, error) {
	cfg := w.Config
	p, err := provisioner.New(provisioner.Config{
		Client: w.Client, Snapshots: w.Snapshots, Informers: w.Informers, Pool: w.Pool,
		Recorder: func(driver string) record.EventRecorder {
			return w.Recorder(provisioner.EventComponent(driver))
		},
		Workers: cfg.Workers, ResyncPeriod: cfg.ResyncPeriod, Metrics: w.Metrics,
		AttacherFinalizer: cfg.AttacherElsewhere || slices.Contains(cfg.Controllers, Attacher),
		NodeDeployment:    cfg.NodeDeployment,
		Ledger:            w.Ledger,
		MarkAfter:         cfg.ProvisioningMarkAfter,
	})
	if err != nil {
		return nil, err
	}
	beat, err := newHeartbeat(cfg, heartbeat.Provisioner, w.Pool.Drivers())
	if err != nil || beat == nil {
		return []Runnable{p}, err
	}
	return []Runnable{p, beat}, nil
}
