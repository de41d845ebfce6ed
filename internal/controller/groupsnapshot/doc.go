// Package groupsnapshot runs the two halves of group snapshots, the roles
// of external-snapshotter v8.6.0's snapshot-controller (common-controller
// groupsnapshot_controller_helper.go) and csi-snapshotter sidecar
// (sidecar-controller groupsnapshot_helper.go) for VolumeGroupSnapshot,
// VolumeGroupSnapshotContent and VolumeGroupSnapshotClass v1. What to do is
// decided by internal/grouping; this package reads, asks, writes, calls
// the driver and records events.
//
// Nouns: Config, Controller (the snapshot-controller's half: the groups
// queue, keys namespace/name, and the group contents queue, keys name),
// Sidecar (the csi-snapshotter's half: the group contents of the drivers
// it serves, keys name).
//
// Controller. When a group is looked at: when it is added, changed or
// deleted; when its content (the one its ref names), one of its members
// (a VolumeSnapshot owned by it) or a member's content changes; and every
// resync period (15s) for every group not ready or being deleted, since a
// group waiting for its claims to be bound is told of nothing. Each sync
// reads the group, the classes, the claims and PVs of its namespace, its
// content, the snapshots of its namespace and its members' contents, all
// from informer caches, asks grouping.DecideGroup for the one next step
// and applies it: one API write (create the content or a member, bind,
// status, finalizer, mark, delete), then the plan's events. Events follow
// the write they report; a failed create records
// CreateGroupSnapshotContentFailed. The last step of a group's deletion,
// the removal of its finalizer, is decided again on a live read of its
// content and of its namespace's snapshots: a content or a member the
// caches have not seen would otherwise be left behind, with its backend
// group snapshot. A group whose delete event shows it went past its
// finalizer (it carried it, with no deletion timestamp: the API server's
// DELETE read it before the finalizer was added) has the content made for
// it given its finalizer, marked and deleted under Delete, as its deletion
// would have (grouping.DecideBypassedContent), unless a live read finds
// the group. A dynamic content is created with its finalizer; any content
// is looked at when it changes: grouping.DecideGroupContent adds its
// finalizer once bound, never deletes it. A group's deletion gives its
// content the finalizer before deleting it under Delete, should it still
// lack one: a content deleted without it would go past the sidecar and
// leave its backend group snapshot behind.
//
// Sidecar. A group content of a served driver is looked at when it is
// added or changed, and every resync period while not ready or being
// deleted. grouping.DecideContent gives the one CSI step. Applied in this
// order: the endpoint first (all source volumes of the group must be held
// by one endpoint of the driver, told by their PVs' node affinity; a
// node-local driver's group across nodes is refused with a
// GroupSnapshotCreationFailed event, before any mark or call), then the
// being-created mark (with the endpoint's topology,
// grouping.EndpointAnnotation, so every later call of the group goes to
// the same node even once its PVs are gone), then the call (in the sync
// that wrote the mark, so a group refused for good backs off), then the content's status, then the
// mark's removal (on success or a final error only). Deletion calls
// DeleteVolumeGroupSnapshot (group ID and every member snapshot ID) under
// Delete and then removes the content's finalizer. Secrets are read live
// through controller/secrets.
//
// Own writes. Each half remembers the copy every write of its own
// returned (loop.Newest, own.go for the controller's four kinds) until
// its informer delivers it. A sync whose write returned the object asks
// for its key again at once (loop.Again) and decides the next step from
// that copy; the informer's event of that very version wakes nothing
// (nor, for groups, members and member contents, one older than it),
// since the sync that wrote already asked for what follows. A step that
// wrote nothing it can read back (a delete; a create that found the
// object there; the finalizer that lets an object go) waits for the
// informer's event instead. So a group takes one sync per step and per
// change made by others, and a failure whose status was just written is
// retried after its backoff, not at the speed of its own events. The
// sidecar writes a content's status only when it changed (a refusal
// repeated leaves it as it is), and a group the driver answered not ready
// is looked at again after a backoff (RetryStart, doubled per look in a
// row, at most RetryMax).
//
// Workers: loop.DefaultWorkers per queue; failed syncs back off per key
// from 1s to 5m, the reference's.
package groupsnapshot
