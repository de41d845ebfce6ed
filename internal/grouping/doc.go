// Package grouping is the pure core of the two group snapshot loops
// (internal/controller/groupsnapshot): every decision about
// VolumeGroupSnapshots, VolumeGroupSnapshotContents and the member
// VolumeSnapshots and contents made for them, as external-snapshotter
// v8.6.0's snapshot-controller (pkg/common-controller/groupsnapshot_*.go)
// and csi-snapshotter sidecar (pkg/sidecar-controller/groupsnapshot_helper.go)
// make them.
//
// Two decisions, one per role:
//   - DecideGroup (the snapshot-controller's role) takes a group and what
//     the loop read about it (its class, the claims of its namespace and
//     their volumes, its content, its members) and returns the one next
//     step: choose the default class, create or bind the group's content,
//     add or remove finalizers, create and bind the members, mirror the
//     content's status, or, for a group being deleted, mark and delete its
//     content and members. DecideGroupContent adds the content's finalizer.
//   - DecideContent (the sidecar's role) takes a group content of a served
//     driver and returns the one next CSI step: mark the content as being
//     created, CreateVolumeGroupSnapshot, GetVolumeGroupSnapshot for a
//     pre-provisioned content, DeleteVolumeGroupSnapshot and the removal of
//     the content's finalizer. AfterCreate and AfterGet turn the driver's
//     answer into the content's status.
//
// One step per decision: the loop applies it and is called again on the
// next change of what it watches, so a crash between two steps leaves an
// object the next decision recognizes.
//
// Tenant safety: a group's members are only the claims of its own
// namespace that its selector matches, bound both ways to CSI volumes of
// the class's driver; a pre-provisioned content is bound only to the group
// its volumeGroupSnapshotRef names (namespace and name, and UID once set);
// an object already in the place of a member (same name) is used only when
// it is the group's own (owner reference with the group's UID, the
// expected source), never adopted otherwise.
//
// Pure: no client, no clock (now is an input), no context, no logging.
package grouping
