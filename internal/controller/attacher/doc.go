// Package attacher runs the attacher loop, the role of the CSI
// external-attacher (v4.12) for every driver of a csi.Pool: it calls
// ControllerPublishVolume for each VolumeAttachment of those drivers and
// ControllerUnpublishVolume once one is deleted, keeping the
// external-attacher's finalizer on the VolumeAttachment and on its
// PersistentVolume while the volume may be attached. What to do next is
// decided by internal/publication; this package reads, asks, and writes.
//
// Nouns: Config (everything the loop needs), Controller (the loop), the
// attachment queue (VolumeAttachments whose spec.attacher is a driver of
// the pool) and the volume queue (PVs being deleted that carry one of our
// finalizers, released once informerindex.AttachmentsOf finds none).
//
// Writes, exactly the reference's: the PV finalizer by JSON Patch (test
// then add), the VolumeAttachment's finalizer and node-ID annotation in one
// merge patch of its metadata, and its status by merge patches of the
// status subresource: attached=true with the publish context and no
// attachError; attachError {message, time, errorCode} or detachError
// {message, time} on failure. A first attach is three writes (two when the
// PV already has the finalizer), all made by one sync: each write's answer
// is decided on again at once instead of waiting for its watch event. A
// driver without PUBLISH_UNPUBLISH_VOLUME gets one status write and no
// finalizer. No Kubernetes events are recorded: the reference records none.
//
// Failures are saved in the status and returned to the runner, which
// retries them with per-attachment exponential backoff (1s to 5m). Updates that only change attachError or
// detachError (our own reports) do not queue the attachment again, which
// would undo the backoff.
//
// Node deployment (Config.NodeName): the loop runs beside one node's
// driver, as the node-local provisioner does, and handles only the
// VolumeAttachments whose spec.nodeName is that node (another node's
// driver is the one that can attach there), and releases the PV finalizer
// only of volumes that driver holds (their node affinity admits the node).
// RBAC cannot narrow a node's writes to its own attachments (it has no
// field filter): the loop keeps to them itself.
package attacher
