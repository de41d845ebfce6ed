// Package explain says, for people, why a claim or a volume is in the state
// it is in and what happens next. It is pure: it takes a snapshot of the
// cluster (Facts) and returns a report (ClaimReport, VolumeReport) that
// renders as a table for an 80-column terminal or as stable JSON.
//
// It has no matching and no lifecycle rules of its own: the verdict for
// every volume considered comes from binding.Match, what the binder does
// next from binding.DecideClaim / binding.DecideVolume, what holds a
// deletion from internal/protection, the VolumeAttachment and node names
// from internal/attachment — the code the controllers run. What it adds is
// reading: grouping and counting the verdicts, and one sentence that says
// what the object waits for.
//
// For the snapshot API it explains a VolumeSnapshot (SnapshotReport: why
// it is not ready, its content, the claims restoring from it, each
// finalizer on it and its content with what it protects and who removes
// it) and a VolumeSnapshotContent (ContentReport); whether a snapshotter
// serves a driver is decided by SnapshotterPresence from the Leases the
// caller read.
//
// For a claim with a data source (Restore: the VolumeSnapshot it restores
// from, or the claim it clones) the verdict is the provisioner's own check
// (provisioning.ClaimSource, RestoreSource, SourceClaimProblem, ...) run on
// what the caller read: only a source of the claim's own namespace is
// read (SnapshotToRead); one of another namespace is reported refused.
// For a VolumeGroupSnapshot (GroupReport) and its content
// (GroupContentReport), what happens next is grouping.DecideGroup's and
// grouping.DecideContent's step, the claims it takes grouping.Sources'
// answer for each claim of its own namespace.
//
// Nouns: Facts (the snapshot), ClaimReport and VolumeReport (the answers),
// Verdict (one volume or claim not chosen, with its reason), NodeUse (a
// volume's attach and publish state on one node), Provisioner (whether
// anything serves a provisioner name, as the caller found out).
package explain
