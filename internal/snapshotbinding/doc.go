// Package snapshotbinding decides what the snapshot loop does with a
// VolumeSnapshot and a VolumeSnapshotContent: the snapshot-controller's
// role of external-snapshotter v8.6.0 (pkg/common-controller, the single
// snapshot half). It binds a snapshot and its content both ways (dynamic:
// the content snapcontent-<snapshot uid> it makes from the source claim's
// volume; pre-provisioned: the content the snapshot names, whose UID it
// fills), resolves the class (and the default class of the volume's
// driver), keeps the reference's finalizers on the snapshot, the content
// and the source claim, mirrors the content's status into the snapshot's,
// and deletes: the being-deleted annotation on the content, the content
// itself under Delete, the snapshot's finalizers once nothing holds it.
//
// It is a pure core: DecideSnapshot and DecideContent take the facts the
// loop read (objects from its caches, the time) and return a plan the
// loop applies in the order internal/controller/snapshot's doc.go states.
//
// Trust: every field of a VolumeSnapshot is its namespace user's. The
// content a snapshot is bound to is only ever the one its spec (or, for a
// dynamic snapshot, its UID) designates, and is used only after its
// volumeSnapshotRef is checked to point back at that snapshot (namespace,
// name and, once set, UID); status.boundVolumeSnapshotContentName is never
// trusted on its own. A snapshot's source claim is looked up in its own
// namespace only, and its volume must point back at it.
package snapshotbinding
