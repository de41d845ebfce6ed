// Package index keeps PersistentVolumes, and the claims waiting for one, in
// memory, organised so that finding the best PV for a claim, or the claim a
// new PV should wake, costs O(log n) instead of a scan of every object.
//
// Nouns:
//   - Index: all known PVs. Free PVs (no claimRef, not being deleted, phase
//     Available or Pending, not reserved) live in one B-tree per shape
//     (class, volume mode, attributes class, access-mode set), ordered by
//     (capacity, name). PVs with a claimRef are kept in a side map by the
//     claim they name, so a claim finds the PVs pre-bound to it in O(1).
//   - Reservation: a claim's hold on a PV between choosing it and writing the
//     bind, so that concurrent workers never hand one PV to two claims.
//   - Version: when the PVs Candidates returns for a claim (its class, and
//     those pre-bound to it) last changed, read in O(1), so that what is
//     computed from them in O(class size) (the tally a waiting claim
//     reports) is computed again only after they changed.
//   - Waiting: the claims still looking for a volume, the other side of the
//     same match. A free PV wakes the one waiting claim it fits best (the
//     largest request it holds, oldest first), found in O(log n) in B-trees
//     partitioned by the shape a PV must share with a claim, so a new PV
//     never wakes every claim; see Waiting for the order and why a claim
//     takes at most two wake-ups.
//   - Tallies: per waiting claim, the tally of its candidates counted with
//     binding.Count and the Version it was counted at, and the rule for
//     when to count again (the candidates settled for a resync period, or
//     MaxStaleResyncs periods passed).
//
// FindBest returns exactly the PV binding.Match would return over every PV
// the index holds (minus PVs reserved by other claims); the property test
// checks this on random populations; Waiting.Wake chooses what asking every
// waiting claim would choose (its model test). None of these is safe for
// concurrent use: the controller guards them with one mutex.
package index
