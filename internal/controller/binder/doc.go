// Package binder is volplane's PersistentVolumeController: it pairs claims
// with volumes and keeps both consistent through Binding and Releasing, with
// the semantics of kube-controller-manager's persistentvolume-binder.
//
// Nouns:
//   - Controller: informers over PVs, claims, classes and pods feeding two
//     rate-limited work queues (claims, volumes) drained by several workers.
//   - sync: one pass over one object: read the newest copy (reads.go), ask
//     package binding what to do, apply the decision's writes in order
//     (writes.go), and return a loop.Result: the runner owns every retry
//     (a running recycler pod is looked at again at its deadline through
//     loop.After, never by the sync queuing its own key).
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
//     never wakes every claim. The claims are kept in index.Waiting, beside
//     the PV index; see it for the order and why a claim takes at most two
//     wake-ups. What becomes of the phase of a PV offered this way is
//     binding.DecidePhase's to say: a new PV a claim takes is left to the
//     bind, which writes Bound.
//   - resync: the safety net, every ResyncPeriod, over the objects not at
//     rest that were not synced within the period (loop.Recent).
//
// Cost. Every step of a sync is O(log n) or O(1) in the number of PVs and
// claims (matching, wake-ups, the resync's choice), so CPU per bind stays
// flat from 1,000 to 100,000 pairs; `volplane bench` measures it. The one
// exception is the tally of a waiting claim (below): O(class size), paid
// once a claim has waited a resync period, and again only after its
// candidates changed and settled.
//
// Events. Each sync records what package binding decided, after the writes
// it reports succeeded, with the reference's reasons and messages, plus
// volplane's own NoVolumeFits on a claim waiting in Immediate mode that no
// volume fits: the tally of every PV by reason, as the scheduler counts
// nodes ("0/12 volumes available: 7 too small, 3 other class, 2 bound to
// other claims"). For WaitForFirstConsumer the scheduler reports instead.
//   - Once per situation: waiting events (ExternalProvisioning,
//     WaitForFirstConsumer, NoVolumeFits, ...) describe a state, and the
//     reference repeats them on every resync. A loop.EventMemory remembers,
//     per object, per kind of sync (its scope) and per reason, the last one
//     recorded, and a sync records only those that differ, so
//     ExternalProvisioning and NoVolumeFits on one claim do not evict each
//     other. A sync without a
//     reason forgets it (its return is news); deletes forget the object.
//     NoVolumeFits is judged without the count of other classes' volumes:
//     a volume of another class appearing is no news for the claim.
//   - The tally is kept per waiting claim (index.Tallies) with the index's
//     Version of its candidates (its class and the PVs pre-bound to it) and
//     the claim's request: a resync that finds both unchanged costs O(1)
//     (BenchmarkWaitingClaimSync: a few µs, against about 10 ms for a count
//     at 10,000 PVs of the class). Counting waits until the claim has
//     waited, and its candidates stayed the same, for a resync period (or
//     index.MaxStaleResyncs periods passed): a claim bound or provisioned within
//     a period never pays, and while PVs keep arriving in a class its
//     waiting claims are neither recounted nor reported at every resync,
//     which would be quadratic work and one event per claim and resync.
//   - Aggregation: what is recorded goes through client-go's
//     EventCorrelator (record.NewBroadcaster with default options, in
//     package manager): an identical event raises the count of the Event
//     object already written; from the 10th similar event (same object,
//     type and reason, other messages) within 10 minutes on, they are
//     written as one "(combined from similar events)" Event; and a spam
//     filter lets 25 events per object and type through in a burst, then
//     one per 5 minutes. That holds repeats down where the
//     memory above does not reach (a controller restart, an object whose
//     situation keeps changing).
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
// keyedmutex, one lock per PV name), taken first; Controller.mu, which guards the index, the
// reservations and the waiting claims, is taken second and only for memory
// updates, never across an API call. Nothing takes a PV lock while holding
// Controller.mu, and no sync holds two PV locks at once.
package binder
