// Package modification is the pure core of the modifier loop (the
// external-resizer's modify controller): it decides what a Bound claim
// whose spec.volumeAttributesClassName differs from its
// status.currentVolumeAttributesClassName needs next, and computes the
// claim and PV states each step writes. Nothing here reads or writes the
// API; internal/controller/modifier does.
//
// Its nouns:
//
//   - Facts: what a sync read (the claim, its PV, the attributes classes it
//     names, whether the driver can modify volumes, and what the loop
//     remembers of earlier calls: an uncertain outcome, a slow retry).
//   - Decision: an Action (None, Modify, Pending, Rollback, Unsupported,
//     Wait) with a Reason from a closed set, the target class and whether
//     the modification starts (marked InProgress) or resumes.
//   - Steps: MarkModifyInProgress, MarkModifyFailed, MarkModifyUnsupported,
//     MarkModifyPending, MarkModifyFinished, MarkRolledBack and
//     VolumeWithClass. Each returns a changed deep copy, or nil when the
//     object already is in that state, and never modifies its argument.
//   - Events: the reference's reasons and message texts (events.go).
//
// The flow, as the reference's: a class that does not exist marks the
// claim Pending (Warning VolumeModifyFailed `VAC "<name>" does not
// exist.`); otherwise the claim is marked InProgress (condition
// ModifyingVolume) and the driver is asked (ControllerModifyVolume with
// the class's parameters). Success writes the PV's class first, then the
// claim (status cleared, current class set, modify conditions gone). A
// failure the driver may still be working on (IsFinal false) keeps the
// claim InProgress and the loop resumes the same target; InvalidArgument
// marks it Infeasible and retries only after a slow retry; any other final
// error stays InProgress. Setting the spec class to "" while nothing is in
// progress cancels (VolumeModifyCanceled).
//
// One difference from the reference, deliberate: a driver without
// MODIFY_VOLUME. The reference runs no modify controller for it, so the
// claim stays as it is, silently; here the claim is marked Infeasible with
// a ModifyVolumeError condition (Unimplemented) and a VolumeModifyFailed
// event saying the driver cannot modify volumes.
package modification
