package doctor

import (
	"cmp"
	"slices"
	"time"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/explain"
)

// Kind is what kind of finding one is. The set is closed; scripts
// match on these strings (-o json "kind").
type Kind string

const (
	// KindClaimPending: a claim Pending longer than Thresholds.PendingFor.
	KindClaimPending Kind = "claim-pending"
	// KindRetainedVolume (information): a Released Retain volume whose
	// claim is gone, at rest as its policy says; no claim binds it until
	// someone gives its data to one (`volplane release pv --to`).
	KindRetainedVolume Kind = "retained-volume"
	// KindOrphanedBackendVolume: a driver holds a volume no PV refers to.
	KindOrphanedBackendVolume Kind = "orphaned-backend-volume"
	// KindMissingBackendVolume: a PV whose volume its driver no longer has.
	KindMissingBackendVolume Kind = "missing-backend-volume"
	// KindAttachmentNodeGone: a VolumeAttachment to a node that was deleted.
	KindAttachmentNodeGone Kind = "attachment-node-gone"
	// KindAttachmentUnused: a VolumeAttachment of a volume no pod on its
	// node uses any more.
	KindAttachmentUnused Kind = "attachment-unused"
	// KindStuckDeleting: a claim, volume or VolumeAttachment being deleted
	// longer than Thresholds.DeletingFor, held by finalizers.
	KindStuckDeleting Kind = "stuck-deleting"
	// KindBindingInvariant: a broken binding invariant (internal/invariants).
	KindBindingInvariant Kind = "binding-invariant"
	// KindOrphanedBackendSnapshot: a driver holds a snapshot no
	// VolumeSnapshotContent names.
	KindOrphanedBackendSnapshot Kind = "orphaned-backend-snapshot"
	// KindOrphanedContent: a VolumeSnapshotContent whose VolumeSnapshot is
	// gone; information under policy Retain, a problem under Delete (nothing
	// deletes it).
	KindOrphanedContent Kind = "orphaned-snapshot-content"
)

// Kinds is every Kind, in the order a report lists them.
func Kinds() []Kind {
	return []Kind{KindBindingInvariant, KindClaimPending, KindStuckDeleting, KindMissingBackendVolume,
		KindOrphanedBackendVolume, KindAttachmentNodeGone, KindAttachmentUnused, KindRetainedVolume,
		KindOrphanedContent, KindMissingBackendSnapshot, KindOrphanedBackendSnapshot, KindVolumeUnhealthy}
}

// Object names what a finding is about. Kind is the API kind
// (PersistentVolumeClaim, PersistentVolume, VolumeAttachment,
// VolumeSnapshot, VolumeSnapshotContent) or BackendVolume (BackendSnapshot)
// for a driver's volume (snapshot), whose Name is its ID and Driver and
// Node say where it is.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Driver    string `json:"driver,omitempty"`
	Node      string `json:"node,omitempty"`
}

// The object kinds.
const (
	ObjectClaim         = "PersistentVolumeClaim"
	ObjectVolume        = "PersistentVolume"
	ObjectAttachment    = "VolumeAttachment"
	ObjectBackendVolume = "BackendVolume"
)

// Fix is one command to paste and what it does. A fix is either safe to
// paste at any later time (its write carries a precondition that fails
// once what it rests on changed) or its Risk names what it may lose.
type Fix struct {
	Says string `json:"says"`
	// Risk, when not empty, names what the command may lose or break, and
	// when: read it before pasting.
	Risk    string `json:"risk,omitempty"`
	Command string `json:"command"`
}

// Severity says whether a finding is a problem (it counts in the exit
// code) or information about a state at rest (it does not).
type Severity string

const (
	SeverityProblem Severity = "problem"
	SeverityInfo    Severity = "info"
)

// Finding is one problem.
type Finding struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	Object   Object   `json:"object"`
	// Problem is one sentence for people.
	Problem string `json:"problem"`
	// Fixes are alternatives or steps, in the order to try them.
	Fixes []Fix `json:"fixes"`
}

// Report is what Check found.
type Report struct {
	// Findings are sorted by kind (the order of Kinds), then object.
	Findings []Finding `json:"findings"`
	// Notes say what was not checked, and why.
	Notes []string `json:"notes"`
}

// Problems counts the findings of SeverityProblem: what the exit code
// counts.
func (r Report) Problems() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityProblem {
			n++
		}
	}
	return n
}

// Thresholds say how long a state may last before it is a problem.
type Thresholds struct {
	PendingFor  time.Duration
	DeletingFor time.Duration
	// AttachmentGrace is how long a VolumeAttachment must exist before
	// doctor advises deleting it, on top of its node no longer reporting
	// the volume in use (the attach/detach loop's unmount wait).
	AttachmentGrace time.Duration
}

// Snapshot is what Check looks at: the cluster as explain reads it (its
// Provisioners: those of the pending claims; Events are not read), and the
// backend volumes. Lists may be in any order.
type Snapshot struct {
	explain.Facts
	// Backends are the CSI controller endpoints read; nil means the backend
	// checks are skipped (BackendsSkipped says why).
	Backends        []Backend
	BackendsSkipped string
	// CSINodes say which nodes run which driver: the endpoints a complete
	// listing of a node-local driver must include.
	CSINodes []*storagev1.CSINode
	// SnapshotsSkipped says why the snapshot API's objects (Facts'
	// VolumeSnapshots and Contents) were not read; "" when they were, and
	// the snapshot findings are then made.
	SnapshotsSkipped string
	// GroupContents are the VolumeGroupSnapshotContents: their members'
	// backend snapshots are theirs, and one being made may have made
	// members no content names yet.
	GroupContents []*groupv1.VolumeGroupSnapshotContent
}

// Backend is one CSI controller endpoint and the volumes it lists.
type Backend struct {
	Driver string
	// Topology is the endpoint's own segment (a node-local driver's node),
	// empty when its volumes are reachable from every node.
	Topology map[string]string
	// Node names the endpoint's node for people ("" when none).
	Node string
	// Volumes are listed before the cluster is read; Relisted are the IDs
	// listed again after it (nil: not listed again).
	Volumes  []BackendVolume
	Relisted map[string]bool
	// ListsSnapshots says the driver lists its snapshots (LIST_SNAPSHOTS);
	// Snapshots are then those listed before the cluster is read, and
	// RelistedSnapshots the IDs listed again after it.
	ListsSnapshots    bool
	Snapshots         []BackendSnapshot
	RelistedSnapshots map[string]bool
	// Health is, by volume ID, the adverse conditions the driver reports
	// (ControllerListVolumeHealth; a volume absent is healthy); nil when
	// the driver does not list its volumes' health.
	Health map[string][]v1.VolumeHealthCondition
}

// BackendVolume is one volume of ListVolumes.
type BackendVolume struct {
	ID            string
	CapacityBytes int64
	Context       map[string]string
	// Accessible are the segments the volume is reachable from.
	Accessible []map[string]string
}

// Check finds every problem of the snapshot.
func Check(s *Snapshot, t Thresholds) Report {
	r := Report{Notes: []string{}}
	var fs []Finding
	fs = append(fs, bindingInvariants(s)...)
	fs = append(fs, pendingClaims(s, t.PendingFor)...)
	fs = append(fs, retainedVolumes(s)...)
	fs = append(fs, stuckDeleting(s, t)...)
	if s.Backends == nil {
		r.Notes = append(r.Notes, "backend volumes not checked: "+s.BackendsSkipped)
	} else {
		missing, notes := missingBackendVolumes(s)
		fs = append(fs, missing...)
		r.Notes = append(r.Notes, notes...)
		fs = append(fs, orphanedBackendVolumes(s)...)
	}
	fs = append(fs, staleAttachments(s, t.AttachmentGrace)...)
	fs = append(fs, unhealthyVolumes(s)...)
	snaps, notes := snapshotFindings(s, t)
	fs = append(fs, snaps...)
	r.Notes = append(r.Notes, notes...)
	sortFindings(fs)
	r.Findings = fs
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	return r
}

func sortFindings(fs []Finding) {
	rank := map[Kind]int{}
	for i, k := range Kinds() {
		rank[k] = i
	}
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(rank[a.Kind], rank[b.Kind]),
			cmp.Compare(a.Object.Kind, b.Object.Kind), cmp.Compare(a.Object.Namespace, b.Object.Namespace),
			cmp.Compare(a.Object.Driver, b.Object.Driver), cmp.Compare(a.Object.Node, b.Object.Node),
			cmp.Compare(a.Object.Name, b.Object.Name), cmp.Compare(a.Problem, b.Problem))
	})
}
