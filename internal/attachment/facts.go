package attachment

import (
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// DefaultMaxWaitForUnmount is how long a volume no pod wants any more may
// stay attached while its node still reports it in use, before it is
// detached anyway if the node is not Ready: kube-controller-manager's
// ReconcilerMaxWaitForUnmountDuration.
const DefaultMaxWaitForUnmount = 6 * time.Minute

// DefaultStatusInterval is the least time between two patches of a node's
// volumesAttached that only add volumes (Plan.StatusDeferred), while the
// node is quiet; a busy node's interval grows (StatusPace). The reference
// patches what its reconciler passes (every 100ms, slower under load) have
// changed: at 1,000 attaches over 10 nodes it made 0.17 status patches per
// attach, at 10,000 0.08. Half a second delays a quiet node's report by
// nothing and a busy node's first ones by at most that.
const DefaultStatusInterval = 500 * time.Millisecond

// maxStatusStreak bounds StatusPace.Streak: a busy node's interval is at
// most 1<<maxStatusStreak times the base (2s for the default).
const maxStatusStreak = 2

// StatusPace is how one node's volumesAttached patches that only add
// volumes are paced: the loop's record, per node, kept from sync to sync.
// Each patch that had to wait (Plan.StatusDeferred since the one before)
// doubles the next interval, up to four times the base; a patch that did
// not wait resets it. So a node that attaches volumes without pause (the
// reference's passes slow down under such load too) is reported every 2s,
// one patch for all that attached meanwhile, and a quiet node at once.
type StatusPace struct {
	// WrittenAt is when the loop last patched the node's volumesAttached
	// (zero: not since it started).
	WrittenAt time.Time
	// Waited says a patch was deferred since WrittenAt; Streak is how many
	// patches in a row had waited (at most maxStatusStreak).
	Waited bool
	Streak int
}

// Interval is the least time after WrittenAt before a patch that only
// adds volumes, for a base interval (0 or less: none).
func (s StatusPace) Interval(base time.Duration) time.Duration {
	if base <= 0 {
		return 0
	}
	return base << min(max(s.Streak, 0), maxStatusStreak)
}

// Deferred is the record after a plan deferred the node's patch.
func (s StatusPace) Deferred() StatusPace {
	s.Waited = true
	return s
}

// Written is the record after the node's volumesAttached was patched at.
func (s StatusPace) Written(at time.Time) StatusPace {
	streak := 0
	if s.Waited {
		streak = min(s.Streak+1, maxStatusStreak)
	}
	return StatusPace{WrittenAt: at, Streak: streak}
}

// Node is what a decision needs to know about the node it is about.
type Node struct {
	Name string
	// Exists is false once the Node object is deleted; its attachments are
	// still decided on, with the last volumesInUse it reported.
	Exists bool
	// Ready is the node's Ready condition being True.
	Ready bool
	// Managed is the ManagedAnnotation being present (any value, as the
	// reference checks).
	Managed bool
	// OutOfService is the OutOfServiceTaint key being present (any effect).
	OutOfService    bool
	VolumesInUse    []v1.UniqueVolumeName
	VolumesAttached []v1.AttachedVolume
}

// NodeOf reads a Node object; nil means the node is gone, and lastInUse is
// then the volumesInUse it last reported.
func NodeOf(name string, node *v1.Node, lastInUse []v1.UniqueVolumeName) Node {
	if node == nil {
		return Node{Name: name, VolumesInUse: lastInUse}
	}
	n := Node{Name: name, Exists: true, VolumesInUse: node.Status.VolumesInUse,
		VolumesAttached: node.Status.VolumesAttached}
	_, n.Managed = node.Annotations[ManagedAnnotation]
	for _, t := range node.Spec.Taints {
		if t.Key == OutOfServiceTaint {
			n.OutOfService = true
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			n.Ready = c.Status == v1.ConditionTrue
		}
	}
	return n
}

// Facts is everything one node's decision rests on. The maps are read
// only; nothing in them is modified.
type Facts struct {
	Node Node
	// Pods are the pods whose spec.nodeName is the node; terminated ones
	// are left out of the desired state here.
	Pods []*v1.Pod
	// Claims by "namespace/name", Volumes and Drivers by name: enough to
	// resolve the pods' volumes. A driver absent from Drivers requires
	// attachment, as a missing CSIDriver object does.
	Claims  map[string]*v1.PersistentVolumeClaim
	Volumes map[string]*v1.PersistentVolume
	Drivers map[string]*storagev1.CSIDriver
	// Attachments are the VolumeAttachments of the node and those, on any
	// node, of the volumes its pods use, made through any PersistentVolume
	// naming the same driver and handle, or inline (for the Multi-Attach
	// rule); Volumes then holds those PVs too.
	Attachments []*storagev1.VolumeAttachment
	// InTreeElsewhere are, per unique name of an in-tree volume (KindInTree)
	// the node's pods want, the other nodes whose volumesAttached list it:
	// an in-tree volume has no attachment to show where it is attached.
	InTreeElsewhere map[v1.UniqueVolumeName][]string
	// Users are, per PersistentVolume name, the pods of any node that use
	// it: the Multi-Attach event names those on the nodes holding it
	// (through any PV of the volume). Read only when another node holds a
	// volume (an attachment of another node, InTreeElsewhere), so a reader
	// may leave it empty otherwise.
	Users map[string][]*v1.Pod
	// UndesiredSince is when each attachment (by VolumeAttachment name)
	// was first seen no longer wanted; Plan.UndesiredSince is its next value.
	UndesiredSince map[string]time.Time
	Now            time.Time
	// MaxWaitForUnmount is DefaultMaxWaitForUnmount unless a test shortens it.
	MaxWaitForUnmount time.Duration
	// Status is how the node's volumesAttached patches have been paced;
	// StatusInterval is the least time between two patches that only add
	// volumes while the node is quiet (0: none). See Plan.StatusDeferred.
	Status         StatusPace
	StatusInterval time.Duration
	// Scope, when not nil, limits the decision to these volumes (by unique
	// volume name, CSI and migrated ones: an in-tree volume is decided with
	// the whole node). The reader then read all of each: every pod of the
	// node using it (Pods may hold other pods too), every attachment of it
	// on any node, every PV naming it; nothing else need be complete. The
	// plan's volumesAttached keeps the node's other entries as they are,
	// and its timers the others' (UndesiredSince). nil: the whole node.
	Scope map[v1.UniqueVolumeName]bool
}
