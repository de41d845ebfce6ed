package binder

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/metriclabel"
)

// Operation names of volume_operation_total_seconds / _errors, as the
// reference labels them.
const (
	opProvision = "provision"
	opDelete    = "delete"
	// pluginUnknown is the plugin_name of a volume no one here can delete.
	pluginUnknown = "N/A"
)

// operation is one provisioning or deletion in flight.
type operation struct {
	plugin, name string
	started      time.Time
}

// operations times what the binder hands off until it is done, as the
// reference does: a provisioning from the ExternalProvisioning hand-off until
// the claim is bound (key: the claim), a deletion from the release of a
// Delete-policy volume until the PV is gone (key: the PV name).
type operations struct {
	mu      sync.Mutex
	running map[string]operation
	m       *metrics
	clock   clock.PassiveClock
}

func newOperations(m *metrics, clk clock.PassiveClock) *operations {
	return &operations{running: map[string]operation{}, m: m, clock: clk}
}

// start begins timing key unless it is timed already.
func (o *operations) start(key, plugin, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.running[key]; !ok {
		o.running[key] = operation{plugin: plugin, name: name, started: o.clock.Now()}
	}
}

// done observes how long key took and stops timing it.
func (o *operations) done(key string) {
	o.mu.Lock()
	op, ok := o.running[key]
	delete(o.running, key)
	o.mu.Unlock()
	if ok {
		o.m.operationSeconds.WithLabelValues(metriclabel.Values(op.plugin, op.name)...).Observe(o.clock.Since(op.started).Seconds())
	}
}

// failed counts an error of key's operation; it stays timed.
func (o *operations) failed(key string) {
	o.mu.Lock()
	op, ok := o.running[key]
	o.mu.Unlock()
	if ok {
		o.m.operationErrors.WithLabelValues(metriclabel.Values(op.plugin, op.name)...).Inc()
	}
}

// forget stops timing key without observing (the claim went away unbound).
func (o *operations) forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.running, key)
}

// volumeReclaimed applies binding.TimeDeletion: it starts timing the
// deletion of a volume released under Delete, and counts an error when no
// one can delete it.
func (c *Controller) volumeReclaimed(pv *v1.PersistentVolume, d binding.VolumeDecision) {
	switch binding.TimeDeletion(pv, d) {
	case binding.DeletionByProvisioner:
		plugin := pluginUnknown
		if class, err := c.classes.Get(binding.VolumeClass(pv)); err == nil {
			plugin = class.Provisioner
		}
		c.ops.start(pv.Name, plugin, opDelete)
	case binding.DeletionNoDeleter:
		c.ops.start(pv.Name, pluginUnknown, opDelete)
	case binding.DeletionNoDeleterFailed:
		c.ops.start(pv.Name, pluginUnknown, opDelete)
		c.ops.failed(pv.Name)
	}
}
