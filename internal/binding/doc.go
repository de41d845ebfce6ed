// Package binding decides, without side effects, how PersistentVolumeClaims
// and PersistentVolumes are paired and what a sync must write next.
//
// Nothing here talks to the API server, reads a clock or logs: every function
// takes the objects it needs and returns a value. The controllers read state,
// ask this package, then perform the writes the answer names. The same values
// feed events and `volplane explain`, so users, logs and explanations can never
// disagree about why a claim is (not) bound.
//
// Nouns:
//   - Request: a claim compiled for matching (class, volume mode, attributes
//     class, access-mode set, size, selector).
//   - ModeSet: a set of access modes; PVs are grouped by their ModeSet and the
//     groups are searched fewest-modes first (GroupOrder).
//   - Reason: the closed set of answers to "why not this PV?"; each has a
//     human message. A Verdict is one PV with its Reason and a detail.
//   - Match: the best PV for a claim among candidates, plus a Verdict for
//     every PV that was not chosen.
//   - Tally: a match's verdicts counted by reason (Count), rendered like the
//     scheduler's "0/12 volumes available: 7 too small, 3 other class".
//     DecideClaim reports it as a NoVolumeFits event on a claim waiting in
//     Immediate mode when the controller passed it (WantsTally says when);
//     `volplane explain` shows the same counts.
//   - ClaimInput / ClaimDecision, VolumeInput / VolumeDecision: everything a
//     claim or volume sync needs to know, and what it must do (an action, the
//     phase to write, the events to emit).
//   - Offer / PhaseDecision: what came of offering a volume decided
//     Available to the waiting claims, and whether its phase is written
//     (DecidePhase): a new volume a claim takes is left to the bind.
//   - ScrubInput / ScrubDecision: the steps of a Recycle (DecideScrub), the
//     recycler pod (RecyclerPod) and the sources it can scrub (ScrubSource).
//   - At rest (ClaimAtRest, VolumeAtRest): objects whose next change can
//     only come from an event, which a periodic resync skips.
//   - DeletionTiming: how a volume decision bears on the timing of its
//     volume's deletion (TimeDeletion), for the reference's operation metrics.
//   - Steps (BindVolumeSpec, BindVolumeStatus, BindClaimSpec, BindClaimStatus,
//     UnbindVolumeSpec, SetVolumePhase, SetClaimPhase, ...): each returns a
//     modified deep copy, or nil when the object already has the wanted
//     state, so a controller never writes an object that would not change.
//
// The semantics follow the Kubernetes v1.36 persistent-volume controller
// (pkg/controller/volume/persistentvolume) with documented deviations: a PV in
// phase Pending (as the API server creates every PV) is matched like an
// Available one, ties between equal PVs are broken by name, and waiting states
// do not spin (see DecideClaim).
package binding
