// Package attachdetach runs the attachdetach loop, the role of
// kube-controller-manager's attach/detach controller: it creates a
// VolumeAttachment for every CSI volume a scheduled, running pod of a
// managed node needs (an in-tree volume of a migrated plugin, through a
// PV or inline, as its CSI driver's: see internal/attachment), reports
// iscsi and fc volumes attached at once with no VolumeAttachment (their
// controller-side attach does nothing), deletes those no pod needs once the node no longer
// uses them (or may not wait any longer), keeps node.status.volumesAttached
// current, and tells pods what happened with the reference's events. What
// to do is decided by internal/attachment, one node at a time, about the
// volumes that changed; this package reads the informer caches, asks it,
// and writes.
//
// Nouns: Config (what the loop needs), Controller (the loop), the node
// queue (work is keyed by node name: every pod, claim, volume, driver and
// attachment change is turned into the nodes it may affect), pending (per
// node, the volumes those changes named: a sync reads and decides about
// them only, attachment.Facts.Scope, so its cost is that of the volumes
// changed, not of the node's pods; a node's own change, the resync, a
// CSIDriver change, in-tree and inline volumes, and a failed read of what
// an event names take the whole node), timers (when each unwanted
// attachment was first seen unwanted, per node), reported (the events
// already recorded, per node, with their volumes) and metrics (per node
// and volume).
//
// Two nodes may sync at once (the reference has one reconciler goroutine),
// each deciding on what the caches showed a moment ago. So a single-node
// volume (by unique volume name: driver and handle, whichever PV names
// it) is reserved in memory for the node whose attachment of it is being
// created, and the reservation is checked together with every attachment
// of the volume the informer's store holds, under one lock, right before
// the create. The reservation ends only once the store holds that very
// attachment, live, or the API server says it does not exist, so at every
// moment one of the two stops a second node's worker, however old its
// facts: the Multi-Attach rule holds across workers. An in-tree volume
// (iscsi, fc) has no attachment to reserve: the syncs of nodes whose pods
// use one run one at a time from reading the other nodes' volumesAttached
// to their status patch (Controller.inTreeMu).
//
// Writes per sync, in the reference's order: at most one node status
// PATCH carrying the whole volumesAttached list (a volume leaves it before
// its attachment is deleted; if that PATCH fails nothing is detached; a
// patch that only adds volumes waits until Config.StatusInterval has
// passed since the node's last one, longer while the node stays busy, so a
// busy node's attaches are reported together, attachment.Plan.StatusDeferred
// and attachment.StatusPace),
// then the detaches (DELETE, NotFound is success), then the attaches
// (CREATE, AlreadyExists is success; up to 16 at once, each volume reserved
// on its own, as the reference's operation executor starts them). The attacher, not this loop, sets
// status.attached; the loop sees it through the attachment informer and
// then reports the volume and records SuccessfulAttachVolume once.
//
// Reads go through the process's shared indexes (internal/informerindex):
// pods by node and by claim, attachments by node and by PV, PVs by unique
// volume name. A sync returns its retry to the runner (loop.Result): a
// plan waiting out an unmount (or a deferred status patch) asks for its
// volumes again when the wait ends (loop.After, pending); a failed write
// is an error, retried with backoff on the volumes it was about.
//
// The reference's desired-state populator (a periodic relist that repairs
// the desired state) is the loop's resync: every node is queued again,
// whole, every ResyncPeriod; it also mends what a sync about some volumes
// leaves alone (a stale volumesAttached entry no event named).
package attachdetach
