// Package resizer runs the resizer loop's expansion half, the role of the
// CSI external-resizer (v2.2.1, RecoverVolumeExpansionFailure on) for every
// driver of a csi.Pool: for a Bound claim whose request exceeds its
// capacity and whose PV is a CSI volume of a served driver, it calls
// ControllerExpandVolume, grows the PV, and records the claim's progress
// in status.allocatedResources / allocatedResourceStatuses and the resize
// conditions, as the reference does. What to do (and to which size) is
// decided by internal/expansion; this package reads, asks, and writes.
//
// Nouns: Config (everything the loop needs, resizing.Config), Controller
// (the loop, built on resizing.Base as the modifier is), the claim queue
// (namespace/name of claims that ask for more than they have), the shared
// pod index (informerindex.ClaimOfPod; a pod uses a claim while neither
// Succeeded nor Failed), and the loop's resizing.Memory of earlier
// failures: the claims whose last expansion ended with a final error
// (recovery may then move to a lowered request), the claims found
// infeasible with the time of their slow retry, and the claims an
// offline-only driver refused as in use.
//
// Writes, the reference's three for an expansion on the controller alone:
// the claim's status (strategic merge patch of the status subresource with
// a resourceVersion precondition: Resizing, ControllerResizeInProgress,
// allocatedResources), the PV's spec.capacity (strategic merge patch), and
// the claim's status again (finished: status.capacity, no resize status or
// conditions, annotation node-expansion-not-required; or, when the driver
// asks for node expansion, FileSystemResizePending and NodeResizePending).
// A driver with node EXPAND_VOLUME only gets no CSI call: the PV is grown
// and the claim marked NodeResizePending (the reference's trivial resizer).
// A crash between writes is repaired by the next sync: the claim's status
// tells it the size being expanded to, the retried call is idempotent, and
// every step already done is not written again.
//
// Errors: a final ControllerExpandVolume error sets the ControllerResizeError
// condition; an infeasible one (InvalidArgument, OutOfRange, NotFound) also
// the status ControllerResizeInfeasible, and the same size is then retried
// only every SlowRetry (the sync returns loop.After; a lowered request is
// tried at once). Other errors
// (Canceled, DeadlineExceeded, Unavailable, ResourceExhausted, Aborted, no
// answer) leave the claim in progress and are retried with backoff. Each
// failure records a VolumeResizeFailed event. A driver that expands only
// offline answers FailedPrecondition for a volume in use; the claim is then
// not asked for again while a running pod uses it (VolumeResizeFailed
// "Unable to expand ... in-use", the reference's --handle-volume-inuse-error),
// and is woken as soon as the last such pod ends.
//
// Events, source "external-resizer <driver>": Resizing before each call,
// VolumeResizeSuccessful or FileSystemResizeRequired after, and
// VolumeResizeFailed.
package resizer
