// Package provisioner is the dynamic provisioning loop (the role of the CSI
// external-provisioner): it creates a backend volume and a pre-bound PV for
// each claim handed to a CSI driver it serves, and deletes both once a
// released PV's reclaim policy says Delete. Every rule it follows lives in
// internal/provisioning, which decides; this package reads the facts
// (informers' listers and indexes, Secrets through
// internal/controller/secrets, what the drivers reported), asks, and
// applies the decision (API writes, CSI calls, events) in the order below.
//
// Nouns: Config and Controller (the loop: its read side, queues and
// memories), plan (a CreateVolume request, the endpoint it goes to and the
// secret references the PV records), createMemory (the creates whose
// outcome is not settled), raceMemory (node deployment's races),
// NodeDeployment.
//
// The order of writes for a claim to provision (syncClaim, provision):
//  0. for a claim on a selected node that no attempt pinned, the capacity
//     accounting shared with the capacity loop (internal/controller/inflight)
//     counts its volume on the node's segment, or, when the driver's last
//     GetCapacity answer there less the volumes in flight leaves no room
//     (capacity.NoRoom), the node is handed back at once: ProvisioningFailed
//     and the selected-node annotation removed, no CreateVolume (handBack);
//  1. the in-progress finalizer, with the endpoint pin and the recorded
//     request (provisioning.MarkInProgress): from the first CreateVolume
//     on, a backend volume may exist without its PV. They are written
//     before it when Config.MarkAfter is 0, when an earlier attempt's marks
//     are on, and for a claim with a data source (provisioning.MarkFirst);
//     otherwise only once the call has run for MarkAfter (written while it
//     runs, createMarking), or after an answer that leaves a volume without
//     its PV (one that may still be running, a refused PV create:
//     markUnsettled). A create the driver answers sooner, with a volume or
//     a final error, writes nothing to the claim: the reference's writes.
//     The price is a window, from the call to the PV (or the late mark),
//     in which a crash followed by the claim's deletion before the next
//     run leaks the volume, as the reference always can; `volplane doctor`
//     reports it (a backend volume no PV refers to) and offers to adopt it;
//  2. the source finalizer on the claim's data source, a VolumeSnapshot
//     (provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection)
//     or a claim (provisioner.storage.kubernetes.io/cloning-protection):
//     a precondition-checked patch of the live object (sources.go);
//  3. CreateVolume, remembered in createMemory until its outcome settles
//     and counted in flight on its endpoint's segment until answered (a
//     volume made stays counted until the capacity loop asks again);
//     on a confirmed ResourceExhausted a claim free to move moves the pin
//     to the next preferred node first, then asks there;
//  4. the PV, pre-bound to the claim;
//  5. the source finalizer released unless another claim being made from
//     that source holds it (provisioning.SourceHeld), then the claim's
//     finalizer, pin and record removed, if they were written. Every path that drops the marks
//     (a final failure, a cleanup, an orphan's cleanup) releases the
//     source first, so a crash in between leaves marks the next sync
//     finishes; a claim deleted or unmarked by another hand queues its
//     source for the same check (syncSource).
//
// A restore reads the VolumeSnapshot and its content live
// (provisioning.RestoreSource decides); a node-local snapshot is restored
// where it lives: its source volume's PV's node, else the endpoint whose
// ListSnapshots returns it.
//
// A failure before step 4 records ProvisioningFailed and applies its
// outcome (provisioning.AfterFailure): the selected node goes back to the
// scheduler, or the marks go once nothing can exist. A crash at any point
// therefore leaves either marks the next run acts on, or a PV that owns the
// volume, or (marked late, step 1) a claim the next run provisions again
// under the same volume name, which the driver answers with the volume it
// made; only that claim's deletion before the next run leaks it.
//
// The order for a claim that no longer wants the volume an attempt may
// have made (cleanup): the API server is asked for the PV (the lister may
// lag a create; an existing PV owns the volume and only the marks go);
// else the attempt's request is replayed to the endpoint it went to, the
// volume it returns deleted, and only then do the marks go.
//
// A claim that goes away while a create for it is unsettled (in flight, or
// answered with a timeout), with nothing holding it (no pvc-protection,
// kubernetes/kubernetes#77988, or the finalizer removed by hand), is
// cleaned up from its delete event (syncOrphan, keyed by UID): the plan
// remembered in memory is replayed and the volume deleted, retried until
// that succeeds or the driver answers that no volume exists.
//
// The order for a Released PV under Delete (syncVolume, deleteReleased):
// the live PV is read again and checked (provisioning.WhyNotDelete); no
// VolumeAttachment may name it, for drivers with an attach step; the
// endpoint that can hold the volume must be served (csi.Pool.ForVolume),
// never another node's, which would answer NotFound for an ID it never
// made, and a node affinity on no key the driver reports cannot tell, so
// it waits too; then DeleteVolume, our finalizer, and last the PV object
// (the reference deletes the PV before it drops its finalizer; dropping
// it first leaves pv-protection, which removes its own finalizer as soon as
// it sees the deletion, the only writer then, so it is never refused). A
// crash between the last two leaves a Released PV under Delete not being
// deleted, which is decided again. Each wait is a VolumeFailedDelete event
// on the PV and a retry. Our finalizer is added back with a patch carrying
// the informer copy's resourceVersion (a PV changed since conflicts and is
// decided again), and dropped with a patch that removes it alone, with no
// read and no resourceVersion (binding.FinalizerPatch).
//
// Every claim write is an Update carrying the resourceVersion the decision
// was made from: a stale copy conflicts and is retried from a newer one.
// Writes that only move the in-progress marks wake nobody
// (onClaimUpdated): the sync that wrote them already decided what follows.
//
// Retries belong to the runner (internal/controller/loop): a sync returns
// an error to be retried with per-key backoff, from half a second to five
// minutes (calls to storage backends must not be hammered), or After(d)
// for a node waiting its turn in a race.
//
// In node deployment (NodeDeployment) the provisioner runs beside one
// node's driver and acts only on what internal/provisioning says is its
// node's. An unassigned claim of an Immediate class is raced for: after
// provisioning.RaceDelay the node writes itself as the selected node with
// the claim's resourceVersion, and the one write that does not conflict
// wins.
//
// Events on claims come from the component "<driver>_volplane" (one per
// driver served), as the external-provisioner reports "<driver>_<identity>";
// a situation that does not change is reported once (loop.EventMemory).
package provisioner
