// Package publication is the pure core of the attacher, the external-attacher's
// role: for one VolumeAttachment of a driver (of a CSI PV, of an in-tree PV
// of a migrated plugin, which is published with the CSI source
// csi-translation-lib makes of it, or of an inline spec) it decides which step comes next
// on the way to "attached" (or, for one being deleted, to "detached"), and for
// a PersistentVolume being deleted whether the attacher's finalizer may go.
// Each step is a value with a reason; the objects a step writes are built by
// pure functions that return a changed copy, or nil when there is nothing to
// change. It performs no I/O: internal/controller/attacher reads, asks, and
// writes.
//
// Its nouns:
//
//   - Capabilities: what the driver's controller service can do; without
//     Publish (PUBLISH_UNPUBLISH_VOLUME) an attachment is only marked attached,
//     with no finalizer and no CSI call (the external-attacher's trivial
//     handler).
//   - Step: the next thing to do for an attachment (add the PV finalizer,
//     annotate the attachment, publish, mark attached, unpublish, ...), or
//     Refuse with the error to save in status.attachError / detachError.
//   - Decision: a Step, its Reason from a closed set, and what the step needs
//     (the node ID, the ControllerPublish/Unpublish request, the error).
//   - Finalizer: attachment.Finalizer(driver), on the VolumeAttachment while
//     the volume may be attached, and on its PersistentVolume while any
//     VolumeAttachment names it.
//   - Node ID: the driver's ID of the node, from CSINode.spec.drivers[]; the
//     attachment keeps a copy in the attachment.NodeIDAnnotation so that a
//     detach still knows it when the CSINode is gone.
package publication
