package binder

import (
	"sync"
	"time"

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
	now     func() time.Time
}

func newOperations(m *metrics) *operations {
	return &operations{running: map[string]operation{}, m: m, now: time.Now}
}

// start begins timing key unless it is timed already.
func (o *operations) start(key, plugin, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.running[key]; !ok {
		o.running[key] = operation{plugin: plugin, name: name, started: o.now()}
	}
}

// done observes how long key took and stops timing it.
func (o *operations) done(key string) {
	o.mu.Lock()
	op, ok := o.running[key]
	delete(o.running, key)
	o.mu.Unlock()
	if ok {
		o.m.operationSeconds.WithLabelValues(metriclabel.Values(op.plugin, op.name)...).Observe(o.now().Sub(op.started).Seconds())
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

// volumeReclaimed starts timing the deletion of a volume released under
// Delete, and counts an error when no one can delete it. plugin_name is the
// class's provisioner (not the provisioned-by annotation, whose values
// would make the series explode), "N/A" without a deleter or a class. A
// migrated volume is not timed: the reference's reclaimVolume stands down
// before it starts the timer.
func (c *Controller) volumeReclaimed(pv *v1.PersistentVolume, d binding.VolumeDecision) {
	if pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		return
	}
	switch d.Reclaim {
	case binding.ReclaimExternal:
		plugin := pluginUnknown
		if class, err := c.classes.Get(binding.VolumeClass(pv)); err == nil {
			plugin = class.Provisioner
		}
		c.ops.start(pv.Name, plugin, opDelete)
	case binding.ReclaimFailed:
		c.ops.start(pv.Name, pluginUnknown, opDelete)
		if d.Phase == v1.VolumeFailed {
			c.ops.failed(pv.Name)
		}
	}
}
