// Package hostpath is volplane's bundled CSI driver. It runs in one of two
// modes:
//
//   - node-local (DriverName): one process per node serves the CSI identity,
//     controller and node services on one unix socket and keeps every volume
//     on the local disk of its node, like local storage.
//   - network (Config.Network, NetworkDriverName): one process stands for
//     network storage that every node reaches. Config.Endpoint serves the
//     identity and controller services for every node of
//     Config.NodeEndpoints; each node's endpoint serves the identity and the
//     node service of that node (NodeGetInfo returns its ID). Volumes live in
//     one shared directory tree and are topology-free (no
//     VOLUME_ACCESSIBILITY_CONSTRAINTS, no accessible topology). Attaching
//     is always on: ControllerPublishVolume attaches to any node served, but
//     a volume attached to one node with a single-node access mode is
//     refused to any other with FailedPrecondition ("Volume published to
//     another node"), and MULTI_NODE_SINGLE_WRITER lets one node at most
//     write; the multi-node access modes are served besides the single-node
//     ones. A node stages only what is attached to it.
//
// Both modes share every rule below; one DataDir holds the volumes of one
// mode only (the driver refuses to start on the other mode's data dir).
//
// Its nouns:
//
//   - Driver: one running plugin, built by New from a Config and served by Run.
//   - Volume: a directory (access type mount) or a sparse file (access type
//     block) under DataDir/volumes. A node-local volume lives on the node
//     whose driver created it and is accessible from that node only: its
//     topology is {TopologyKey: NodeID}. A network volume has no node.
//   - Snapshot: a full copy of a volume (directory tree, or sparse file) under
//     DataDir/snapshots, ready as soon as CreateSnapshot returns, of mount and
//     block volumes alike; GetSnapshot reads one (NotFound if there is
//     none). Snapshots are independent of their source: deleting the volume
//     keeps the snapshot. A volume restored from a snapshot has the size
//     asked for if that is larger than the snapshot's (a block volume's file
//     is grown, sparse), the snapshot's size otherwise, within the limit.
//     A copy (snapshot or clone) of a volume in use never leaves the volume,
//     however its pod swaps symlinks in while it runs: it walks with
//     directory descriptors and O_NOFOLLOW, and copies links as links (copy.go).
//   - Group snapshot (the GroupController service,
//     CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT, in both modes): snapshots of
//     several volumes of this driver taken together (groups.go). Its ID is
//     "group-" and a hash of its name; each member is an ordinary snapshot
//     (listed by ListSnapshots, found by GetSnapshot, restored by
//     CreateVolume) whose group_snapshot_id names the group, and whose ID is
//     a hash of the group's name and the source volume's ID, so a retried
//     creation returns the same group and members. Every source volume must
//     exist on this driver (on its node, for a node-local driver). A member
//     cannot be deleted alone: DeleteSnapshot refuses it with
//     InvalidArgument, as the CSI spec says for a snapshot that has a
//     group_snapshot_id; DeleteVolumeGroupSnapshot deletes the group and its
//     members, and only when the request's snapshot_ids are exactly the
//     members (GetVolumeGroupSnapshot checks them too, when given).
//     What a group promises, and no more: every member is copied while the
//     driver holds the locks of the group, of every member and of every
//     source volume, taken at once before the first copy and released after
//     the group is recorded. Every driver call that changes a volume (expand,
//     modify, delete, attach and detach, stage and unstage, publish and
//     unpublish, node expansion, and a snapshot, clone or restore naming it)
//     takes that volume's lock, so none of them runs between the first copy
//     and the last: no member volume changes through the driver while the
//     group is taken. The copies are not a point-in-time image of data a pod
//     writes through a mount it already has: the driver does not stand
//     between a pod and its files, so a workload that keeps writing during
//     the group may be caught at different instants in different members
//     (quiesce it first, as with any copy-based snapshot). The group and all
//     its members are recorded in one write of the state file, after every
//     copy: a driver killed half way has recorded nothing of the group (the
//     data it copied is set aside at the next start, see the state file), and
//     no call sees part of a group.
//   - Attachment: the record that ControllerPublishVolume made a volume
//     available to a node. Only kept when Config.AttachRequired; the node then
//     stages only attached volumes.
//   - Staging and publication: the node side, recorded per node (a network
//     volume may be staged on several nodes). Staging bind-mounts a mount
//     volume's directory onto the staging path, or attaches a block volume's
//     file to a loop device; publishing bind-mounts that onto the target path.
//     Both are recorded in the state before anything is mounted, and the
//     node calls undo only what the state records (each node service only
//     its own node's records): a path the driver did not
//     stage or publish is never unmounted or removed. Every node path is
//     resolved (symlinks followed) before it is checked, mounted onto,
//     unmounted or removed, and a recorded path is undone only while it still
//     resolves where it was mounted (nodepath.go).
//   - Mounter: the seam to the kernel (bind mounts, loop devices). The real one
//     uses k8s.io/mount-utils and losetup; FakeMounter records instead.
//   - State: DataDir/state.json, a snapshot of the volumes, snapshots,
//     attachments, stagings, publications and, for network volumes, the
//     size each node has grown a volume to, group snapshots and inline
//     volumes, continued by DataDir/state.journal, one checksummed, fsynced
//     entry of the changed records per change, so a change costs what it
//     changes, not the size of the state (version 6; a version 5 to 2 file
//     reads as is and is replaced by a version 6 snapshot at the first
//     write, a version 1 file, from before stagings were kept per node, is
//     read and migrated). The journal is compacted into a new snapshot
//     (written atomically: temp file, fsync, rename, fsync of the
//     directory) when it outgrows the snapshot (store.go). A killed driver
//     restarts with everything it had acknowledged: a torn last entry of
//     the journal is dropped, and the temp files of writes a crash cut
//     short are removed at start. The two files are the only record of
//     what the data on disk is, so the driver never deletes data it has no
//     record of: it refuses to start when either is damaged, when the
//     state file is missing while volumes are on disk, or when a journal
//     is there without its state file, and moves data the state does not
//     record (a creation that died half way) under DataDir/unrecorded
//     (recovery.go). In memory each kind of record is a table (table.go),
//     a persistent map: an update copies only what it changes, and readers
//     never lock.
//
// Names and IDs. Every name and ID in a request (volume and snapshot names,
// volume, snapshot and node IDs) is checked in one place, validate.go: it must
// be non-empty, valid UTF-8, at most 128 bytes (the CSI limit for strings), and
// must not contain '/', '\', "..", NUL or other control characters; otherwise
// the call fails with InvalidArgument. Names never become paths. A volume's ID
// is "vol-" followed by the first 32 hex digits of sha256(name), a snapshot's
// "snap-" likewise: deterministic, so a CreateVolume retried after a crash
// finds what the first attempt left on disk, and safe, because only IDs of
// exactly that shape are ever turned into a path under DataDir.
//
// Capacity. Config.Capacity is the number of bytes that volumes (their full
// size, sparse or not) and snapshots (the size of their source) may claim
// together; CreateVolume, CreateSnapshot and ControllerExpandVolume fail with
// ResourceExhausted beyond what is free of it. Growing a volume beyond the
// whole of it (which no amount of freeing could serve, and the volume cannot
// move elsewhere) fails ControllerExpandVolume with OutOfRange, which the CSI
// sidecars treat as infeasible rather than retry as they retry
// ResourceExhausted; CreateVolume stays ResourceExhausted for such a size,
// since another node's driver may hold it and the provisioner then asks the
// scheduler for another node. Sizes are kept exactly as requested (no
// rounding); a request without a size gets 1 GiB, and no single volume may
// exceed 1 PiB (OutOfRange). StorageClass parameters are accepted and ignored:
// this driver has nothing to tune. The fs_type of a mount capability is
// ignored too: a mount volume is a directory on the node's filesystem.
//
// Expansion. ControllerExpandVolume grows a volume online or offline. Node
// expansion (NodeExpandVolume) is required for block volumes, whose loop
// device must be refreshed, and on the network driver for every volume: a
// network filesystem is grown on the node that mounts it. The network driver
// records per node the size the node has the volume at (the volume's size
// when the node first staged it, raised by NodeExpandVolume), persisted like
// the other node records; NodeGetVolumeStats reports that size, so a node
// that has not expanded yet still shows the old one.
//
// Mutable parameters (MODIFY_VOLUME; a VolumeAttributesClass's parameters in
// Kubernetes). CreateVolume and ControllerModifyVolume accept two keys:
// "iops", a decimal integer from 1 to 100000, and "tier", "standard" or
// "premium"; any other key or value fails with InvalidArgument naming it.
// The driver tunes nothing with them: it records them with the volume in the
// state file (Driver.MutableParameters reads them back). A modification sets
// the keys it names and keeps the others; repeating it succeeds and changes
// nothing, and modifying a volume that does not exist is NotFound. A repeated
// CreateVolume with other mutable parameters is the same volume, given the
// new ones (all of them, as a creation names them): a creation retried after
// its class was made again with other parameters leaves the volume as its
// PV will say, and a CO that took AlreadyExists as "nothing was made" would
// lose track of the volume.
package hostpath
