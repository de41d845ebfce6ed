// Package snapshot runs the snapshot loop, the role of
// external-snapshotter v8.6.0's snapshot-controller (pkg/common-controller,
// the single-snapshot half; group snapshots have their own loop): it binds
// VolumeSnapshots and VolumeSnapshotContents both ways, creates the
// dynamic content snapcontent-<snapshot uid> from the source claim's
// volume, keeps the reference's finalizers on the snapshot, the content
// and the source claim, mirrors the content's status into the snapshot's
// and deletes. What to do is decided by internal/snapshotbinding
// (DecideSnapshot, DecideContent); this package reads, applies and records
// events.
//
// Nouns: Config, Controller, two queues: snapshots (keys namespace/name;
// a snapshot whose content changed is followed up ahead of those not
// looked at yet, loop.FollowUpQueue, where the reference's is one FIFO)
// and contents (keys name). The snapshotter loop (the sidecar's role)
// makes the backend snapshot and writes the content's status.
//
// Reads: every object from the informer caches (snapshots, contents,
// classes, claims, PVs, nodes (only to label a new content with its source
// volume's node: snapshotbinding.ManagedBy), and the group snapshots and
// group contents when the group API is served). The reference GETs the snapshot before each
// status write; this loop writes with the resourceVersion it read and
// retries a conflict. A snapshot's claim is only looked up in the
// snapshot's namespace; the content a snapshot may be bound to is only the
// one its spec (or UID) designates, and is used only once its
// volumeSnapshotRef points back.
//
// Write order for a snapshot, each step only if the plan has it, stopping
// at the first failure (retried with backoff):
//  1. the snapshot updated: the default class into its spec, its
//     finalizers added (as-source, and bound under Delete);
//  2. the source claim's finalizer added (before its content exists);
//  3. the content bound (pre-provisioned: the UID filled, with the
//     resourceVersion read, so only the content checked is bound) or
//     created (dynamic, born with its bound-protection finalizer;
//     AlreadyExists is reused);
//  4. the content annotated being-deleted, then deleted (Delete policy);
//  5. the snapshot's status written (mirrored from the content, or the
//     error);
//  6. the source claim's pvc-as-source-protection finalizer removed (no
//     snapshot of the claim is still being made; a sibling that would
//     hold the claim but has no content in the cache has its content read
//     from the API server first);
//  7. the snapshot's finalizers removed (last: after its content was
//     dealt with and its claim released);
//  8. the plan's events recorded on the snapshot.
//
// For a content: its bound-protection finalizer added, then the
// being-deleted annotation when its snapshot is being deleted; its
// snapshot is queued on every change of the content.
//
// The syncs of the snapshots of one claim are serialized (a lock per
// namespace/claim), and a claim this loop wrote is read as written until
// the cache catches up: a release and a sibling's content creation never
// interleave, and a sibling never trusts a cached finalizer already
// removed. Without both, a release raced with a new snapshot of the same
// claim, which then took a snapshot of a claim free to be deleted (the
// soak, seed 987670: its volume was deleted under it). A group member
// being deleted whose group the cache does not hold reads the group from
// the API server before its in-group finalizer goes, and a snapshot being
// deleted that the cache shows no claim restoring from lists its
// namespace's claims from the API server before its as-source finalizer
// goes (a claim made just before the deletion keeps it). A snapshot whose
// delete event shows it went past this loop's finalizers (it carried one,
// with no deletion timestamp: the API server's DELETE read it before they
// were added) has the content made for it deleted under Delete, as its
// deletion would have (snapshotbinding.SkippedFinalizers; the soak, seed
// 42).
//
// Queued: a snapshot on each change of it, of its content, of a claim it
// snapshots or that restores from it, and of its group (deleted). Retries
// back off per key from 1s to 5m, the reference's
// --retry-interval-start/-max. Workers: 10, the reference's
// --worker-threads.
package snapshot
