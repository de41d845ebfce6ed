// Package attachdetach runs the attachdetach loop, the role of
// kube-controller-manager's attach/detach controller: it creates a
// VolumeAttachment for every CSI volume a scheduled, running pod of a
// managed node needs (an in-tree volume of a migrated plugin, through a
// PV or inline, as its CSI driver's: see internal/attachment), reports
// iscsi and fc volumes attached at once with no VolumeAttachment (their
// controller-side attach does nothing), deletes those no pod needs once the node no longer
// uses them (or may not wait any longer), keeps node.status.volumesAttached
// current, and tells pods what happened with the reference's events. What
// to do is decided by internal/attachment, one node at a time; this
// package reads the informer caches, asks it, and writes.
//
// Nouns: Config (what the loop needs), Controller (the loop), the node
// queue (work is keyed by node name: every pod, claim, volume, driver and
// attachment change is turned into the nodes it may affect), timers (when
// each unwanted attachment was first seen unwanted, per node), reported
// (the events already recorded, per node) and metrics.
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
// passed since the node's last one, so a busy node's attaches are reported
// together, attachment.Plan.StatusDeferred),
// then the detaches (DELETE, NotFound is success), then the attaches
// (CREATE, AlreadyExists is success; up to 16 at once, each volume reserved
// on its own, as the reference's operation executor starts them). The attacher, not this loop, sets
// status.attached; the loop sees it through the attachment informer and
// then reports the volume and records SuccessfulAttachVolume once.
//
// Reads go through the process's shared indexes (internal/informerindex):
// pods by node and by claim, attachments by node and by PV, PVs by unique
// volume name. A sync returns its retry to the runner (loop.Result): a
// plan waiting out an unmount asks for the node again when the wait ends
// (loop.After); a failed write is an error, retried with backoff.
//
// The reference's desired-state populator (a periodic relist that repairs
// the desired state) is the loop's resync: every node is queued again
// every ResyncPeriod.
package attachdetach
