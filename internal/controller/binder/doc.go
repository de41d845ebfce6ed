// Package binder is volplane's PersistentVolumeController: it pairs claims
// with volumes and keeps both consistent through Binding and Releasing, with
// the semantics of kube-controller-manager's persistentvolume-binder.
//
// Nouns:
//   - Controller: informers over PVs, claims, classes and pods feeding two
//     rate-limited work queues (claims, volumes) drained by several workers.
//   - sync: one pass over one object: read the newest copy, ask package
//     binding what to do, apply the decision's writes in order.
//   - newest: the newest copy of each object the controller has seen, from
//     the informer or from its own writes, so a sync never acts on an object
//     older than one it wrote. Copies arrive in no fixed order (under load
//     the informer can deliver a later change before a write's answer is
//     handled): the index and the waiting claims keep the later of two
//     copies (resourceversion.Older), never the last one handed to them.
//   - reservation: a PV promised to one claim in memory before the first
//     write, so two workers can never give one PV to two claims.
//   - waiting claims: unbound claims with no volume yet; a free PV wakes one
//     claim it fits (the largest request it holds, oldest first), found in
//     O(log n), so binding never waits for the periodic resync and a new PV
//     never wakes every claim. See waitingClaims for the order and why a
//     claim takes at most two wake-ups.
//   - resync: the safety net, every ResyncPeriod, over the objects not at
//     rest that were not synced within the period (loop.Recent).
//
// Cost. Every step of a sync is O(log n) or O(1) in the number of PVs and
// claims (matching, wake-ups, the resync's choice), so CPU per bind stays
// flat from 1,000 to 100,000 pairs; `volplane bench` measures it.
//
// The invariant. A PV and a claim are bound to each other when the PV's
// claimRef names the claim (namespace, name and UID) and the claim's
// spec.volumeName names the PV. At rest, a PV is the volume of at most one
// Bound claim, and every Bound claim's PV points back at it by UID. Every
// decision in package binding is written so that applying any prefix of its
// writes keeps this true and the next sync completes the rest.
//
// The four writes of a bind, in this order, each skipped when it would change
// nothing (package binding returns nil for a no-op):
//  1. PV spec: claimRef (with the claim's UID) and the bind-completed annotations;
//  2. PV status: phase Bound;
//  3. claim spec: volumeName and the bind annotations;
//  4. claim status: phase Bound, capacity and access modes from the PV.
//
// A crash after write 1 leaves a PV that names the claim: the claim's next
// sync finds it through spec.volumeName or the claimRef and continues at
// write 2. The claim is never written before the PV names it, so no claim can
// point at a PV that another claim holds.
//
// Lock order. Work on one object is serialized by its queue (one key, one
// worker). Across the two queues, a PV's writes happen under pvLocks (a
// mutex per PV name), taken first; Controller.mu, which guards the index, the
// reservations and the waiting claims, is taken second and only for memory
// updates, never across an API call. Nothing takes a PV lock while holding
// Controller.mu, and no sync holds two PV locks at once.
package binder
