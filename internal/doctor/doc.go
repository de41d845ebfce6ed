// Package doctor finds what is wrong in a cluster's persistent volumes and
// says, for each problem, the command that fixes it. It is pure: it takes
// a snapshot of the cluster and of the drivers' volumes (Snapshot) and
// returns findings (Report), which render as a table for an 80-column
// terminal or as stable JSON. Reading the snapshot and running the fixes
// is the caller's (internal/checkup).
//
// No advice of it may lose data unawares: every fix is safe to paste at
// any later time (a finalizer is removed by a JSON patch that tests the
// resourceVersion and the finalizer's index), or its Risk names what it
// may lose. What cannot be known from one snapshot is held back: an
// attachment is stale only once its node no longer reports the volume in
// use and it is older than a grace; a volume is missing only from a
// listing of every endpoint that could hold it; a backend volume that may
// be a claim's being provisioned is not offered for adoption.
//
// It has no lifecycle rules of its own: a pending claim's summary comes
// from binding.Match and binding.Count, the binder's invariants from
// internal/invariants, what keeps a claim from deletion from
// internal/protection, unique volume names and attachment names from
// internal/attachment, the finalizer names from the packages that add
// them.
//
// The snapshot API's findings (snapshots.go, snapdeleting.go): backend
// snapshots no content names (adopted as Retain, never deleted), contents
// whose VolumeSnapshot is gone, stuck deletions of snapshots and contents;
// a finalizer is offered for removal only once what it protects is gone.
// A ready content whose backend snapshot a complete listing no longer
// holds (snapmissing.go) is reported with advice only: see who restores
// from it, take the snapshot again; never a delete of a bound content.
//
// Nouns: Snapshot (what is checked), Backend (one CSI controller
// endpoint's volumes and snapshots, listed before and after the cluster
// was read), BackendSnapshot (one snapshot ListSnapshots lists),
// Finding (a Kind from a closed set, its Severity: a problem, or
// information that does not count in the exit code; the Object, a
// sentence, and the Fixes), Fix (a command to paste, what it does, and
// its Risk), Report (every finding, sorted, and notes on what was not
// checked), ReleaseDecision (whether `volplane release pv` may clear a
// volume's claimRef or pre-bind it to one claim, or the Refusal why not,
// decided on a ReleaseInput).
package doctor
