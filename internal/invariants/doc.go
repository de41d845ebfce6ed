// Package invariants checks a cluster's volumes against the promises
// volplane never breaks, whatever crashed, timed out or raced on the way:
// no PV bound to two claims, no Bound claim without its PV, no backend
// volume without a PV and no PV without its backend volume, no Retain
// volume deleted, every claim deleted under a Delete policy fully
// reclaimed, nothing stuck Terminating. It is meant for the end of soak and
// e2e tests, once everything is quiescent. It is pure: facts in (State,
// which internal/checkup.ReadInvariants reads from a cluster and its
// drivers), violations out, one sentence each. Check holds every promise;
// Bindings and Backends are parts of it for tests that make only those
// promises. Resized and Attributes are the promises of expansion and of
// VolumeAttributesClasses at rest. Outside and Unchanged add the promise
// to a tenant: what lies outside their namespace is the same after they
// acted. The snapshot promises (snapshots.go, checked when the State holds
// the snapshot objects): every backend snapshot has a content, a Delete
// content goes with its snapshot and leaves no backend snapshot, no claim
// was restored from a snapshot that was not ready.
//
// Nouns: State (claims, PVs and what each backend holds), Backend (one
// driver instance's volumes: a node-local driver's on its node, or a
// network driver's, with what it has attached where and each volume's
// size), Expect (what the test itself knows happened: volumes it created
// with Retain, claims it deleted, what earlier tests left), Leftovers
// (what a State already breaks, not to be reported again), Volume (a
// driver's volume or snapshot by handle), BackendSnapshot (one snapshot a
// driver lists), DeletedSnapshot (a VolumeSnapshot the test deleted).
package invariants
