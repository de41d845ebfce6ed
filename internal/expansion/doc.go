// Package expansion is the pure core of growing a claim's volume: the
// resizer loop's role (the CSI external-resizer's expansion half, with
// RecoverVolumeExpansionFailure as in Kubernetes v1.36) and the claim
// status steps the node agent takes for node expansion (the kubelet's). It
// decides, from what a sync read, whether to expand and to which size, and
// builds the claim status each step writes; it performs no I/O:
// internal/controller/resizer reads, asks, and writes.
//
// Its nouns:
//
//   - Facts: what a sync of one claim read (the claim, its PV, what the
//     driver can do, what this resizer remembers of earlier failures).
//   - Decision: an Action (None, Expand, RetryLater, Infeasible), its
//     Reason from a closed set, and for Expand the Size to ask the driver
//     for. A decision never asks for less than the PV's capacity (volumes
//     only grow), nor for a size no CSI request can carry (Bytes): such a
//     size, which a user may write into a claim, is Infeasible.
//   - BoundTo: the rule that a claim's volume is its own (the PV's
//     claimRef is the claim, UID included), checked before any action.
//   - Resize status: claim.status.allocatedResourceStatuses[storage], one
//     of ControllerResizeInProgress, ControllerResizeInfeasible,
//     NodeResizePending, NodeResizeInProgress, NodeResizeInfeasible; with
//     status.allocatedResources[storage], the size last asked for. Both
//     survive a crash and tell the next sync where the expansion stopped.
//   - Resize conditions: Resizing, FileSystemResizePending,
//     ControllerResizeError, NodeResizeError. Other conditions are never
//     touched.
//   - Steps (Mark*): pure functions from a claim to its changed deep copy,
//     or nil when the claim already is so, so callers write only real
//     changes. The controller side: MarkControllerResizeInProgress,
//     MarkNodeResizePending, MarkResizeFinished, MarkControllerResizeFailed.
//     The node side: MarkNodeResizeInProgress, MarkNodeResizeFinished,
//     MarkNodeResizeFailed.
//   - Events: the reference's reasons and message texts (events.go).
package expansion
