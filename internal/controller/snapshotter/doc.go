// Package snapshotter runs the snapshotter loop, the role of the CSI
// csi-snapshotter sidecar (external-snapshotter v8.6.0,
// pkg/sidecar-controller) for every driver of a csi.Pool that has
// CREATE_DELETE_SNAPSHOT: for each VolumeSnapshotContent of such a driver
// it takes the snapshot of a dynamic content (CreateSnapshot), checks the
// readiness of a snapshot it did not take (ListSnapshots), deletes the
// snapshot of a content being deleted under the Delete policy
// (DeleteSnapshot), and releases the content by dropping its
// bound-protection finalizer. What to do is decided by
// internal/snapshotting; this package reads, calls the driver and writes.
// Group snapshots are the group loops'; a member content is never created
// here.
//
// Nouns: Config (what the loop needs), Controller (the loop), the content
// queue (keyed by content name), newest (our last write of each content,
// newer than the informer's copy until it catches up), waits (per content,
// the waits in a row, for their backoff), and the pool's snapshot homes
// (csi.Pool.FindSnapshot: which endpoint of a node-local driver holds a
// snapshot).
//
// Endpoints: a node-local driver runs one endpoint per node, and a
// snapshot lives on its source volume's node. CreateSnapshot goes to the
// endpoint of the source PV (found by driver and volume handle through the
// shared index informerindex.VolumeOfPV, then csi.Pool.ForVolume); the
// endpoint that answered is remembered. A delete goes to the endpoint of
// the source PV while it exists (the delete waits if that node's driver is
// not served). A readiness check, or a delete once the PV is gone, of a
// snapshot whose endpoint is not remembered asks every endpoint
// ListSnapshots(snapshot_id) and uses the one that lists it: such a driver
// answers DeleteSnapshot with OK for an ID it never made, so a delete sent
// elsewhere would release the content and leak the data. When every
// endpoint answers without it, nothing is left to delete.
//
// Writes, in the reference's order. Create: the being-created annotation
// (merge patch) before the call; on an answer the status (JSON patch of
// the status subresource: snapshotHandle, creationTime in ns, restoreSize,
// readyToUse), then the annotation's removal; on a final error (not
// Canceled, DeadlineExceeded, Unavailable, ResourceExhausted, Aborted, nor
// an error without a status: snapshotting.CreateFinal) the annotation's
// removal, then the error status; on any other error the error status
// only, so the content keeps the annotation and is not released until a
// later CreateSnapshot of the same name answers. Check: the status. Delete:
// DeleteSnapshot, then the finalizer's removal (merge patch with the
// resourceVersion as precondition). Unlike the reference, the status is
// not cleared between the two: DeleteSnapshot is idempotent, so a crash
// between them only repeats it.
//
// Retries: a failed sync is retried with per-content backoff (RetryStart
// to RetryMax, the reference's 1s to 5m). A snapshot not ready yet, and a
// content being deleted that may not be released yet (CreateSnapshot has
// not answered, or its VolumeSnapshot has not set being-deleted), are
// looked at again after the same backoff (loop.After), whatever the
// events; and every change to a content but our own last write queues it.
// So a deletion that arrives while a slow CreateSnapshot runs is taken as
// soon as the create answers (external-snapshotter#1388), and a late
// being-deleted annotation is never waited for beyond the backoff
// (external-snapshotter#1446). After each write that changes what comes
// next, the sync asks for the content again at once (loop.Again) and
// decides from its own write's copy. No first CreateSnapshot is sent for
// a content already being deleted (the reference sends it, then has a
// snapshot to delete).
//
// Events, source "csi-snapshotter <driver>": SnapshotCreationFailed,
// SnapshotContentCheckandUpdateFailed, SnapshotDeleteError, the
// reference's reasons and messages.
//
// Node deployment (Config.NodeName): as the reference's distributed
// snapshotting, a content labelled snapshotapi.ManagedByLabel is served by
// the node it names and by no other (the snapshot loop labels a dynamic
// content with the one node its source volume's affinity admits); an
// unlabelled one by the node whose driver holds its source volume (its
// PV's node affinity) or, once the PV is gone, lists its snapshot, which
// the reference's node deployment never serves. Under deploy/'s admission
// policy a node may write only contents labelled with it (and a group's):
// its writes to another unlabelled content are refused, retried with the
// backoff, until an administrator labels it.
package snapshotter
