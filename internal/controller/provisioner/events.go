package provisioner

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// eventScope is the provisioner's scope in its loop.EventMemory: every
// event it records, on claims and on PVs, is remembered under it, so that
// retries failing the same way record one event, not one per retry (the
// queue backs off, but a user reading events wants one line per change).
// Provisioning is thus reported once per claim, ProvisioningFailed once per
// distinct error.
const eventScope = "provisioner"

// event records on obj through the driver's recorder unless it repeats the
// last event recorded on obj with the same reason.
func (c *Controller) event(obj runtime.Object, uid types.UID, driver, eventType, reason, format string, args ...any) {
	c.eventIn(reason, obj, uid, driver, eventType, reason, format, args...)
}

// eventIn is event remembered under slot rather than the reason: for a
// second message that follows another of the same reason every time (the
// populator note after the Provisioning one), which would otherwise never
// repeat the last message of its reason and be recorded again each sync.
func (c *Controller) eventIn(slot string, obj runtime.Object, uid types.UID, driver, eventType, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r := c.recorders[driver]
	if r == nil || !c.memory.events.Due(uid, eventScope, slot, eventType+"/"+msg) {
		return
	}
	r.Event(obj, eventType, reason, msg)
}
