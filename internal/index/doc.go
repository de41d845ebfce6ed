// Package index keeps PersistentVolumes in memory, organised so that finding
// the best PV for a claim costs O(log n) instead of a scan of every PV.
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
//
// FindBest returns exactly the PV binding.Match would return over every PV
// the index holds (minus PVs reserved by other claims); the property test
// checks this on random populations. The index is not safe for concurrent
// use: the controller guards it with one mutex.
package index
