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
//     older than one it wrote.
//   - reservation: a PV promised to one claim in memory before the first
//     write, so two workers can never give one PV to two claims.
//   - waiting claims: unbound claims with no volume yet; a free PV wakes the
//     oldest one it fits, so binding never waits for the periodic resync.
package binder
