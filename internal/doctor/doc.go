// Package doctor finds what is wrong in a cluster's persistent volumes and
// says, for each problem, the command that fixes it. It is pure: it takes
// a snapshot of the cluster and of the drivers' volumes (Snapshot) and
// returns findings (Report), which render as a table for an 80-column
// terminal or as stable JSON. Reading the snapshot and running the fixes
// is the caller's (internal/checkup).
//
// It has no lifecycle rules of its own: a pending claim's summary comes
// from binding.Match and binding.Count, the binder's invariants from
// internal/invariants, what keeps a claim from deletion from
// internal/protection, the finalizer names from the packages that add
// them.
//
// Nouns: Snapshot (what is checked), Backend (one CSI controller
// endpoint's volumes), Finding (one problem: a Kind from a closed set,
// the Object, a sentence, and the Fixes), Fix (a command to paste and
// what it does), Report (every finding, sorted, and notes on what was not
// checked), ReleaseDecision (whether `volplane release pv` may clear a
// volume's claimRef, or the Refusal why not).
package doctor
