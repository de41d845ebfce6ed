package snapshotbinding

import (
	"fmt"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Mirror is the status snapshot gets from its content (bound both ways),
// as the reference's updateSnapshotStatus writes it, with the events of
// the change (SnapshotCreated when the creation time first appears,
// SnapshotReady when it becomes ready); nil when nothing changes. group
// is the name of the group the content's group handle belongs to, "" if
// none.
func Mirror(snapshot *snapv1.VolumeSnapshot, content *snapv1.VolumeSnapshotContent, group string) (*snapv1.VolumeSnapshotStatus, []Event) {
	cs := content.Status
	if cs == nil {
		cs = &snapv1.VolumeSnapshotContentStatus{}
	}
	ready := ptr.Deref(cs.ReadyToUse, false)
	var created *metav1.Time
	if cs.CreationTime != nil {
		created = &metav1.Time{Time: time.Unix(0, *cs.CreationTime)}
	}
	var st snapv1.VolumeSnapshotStatus
	if snapshot.Status != nil {
		st = *snapshot.Status.DeepCopy()
	}
	old := snapshot.Status
	changed := old == nil
	if st.BoundVolumeSnapshotContentName == nil {
		st.BoundVolumeSnapshotContentName = ptr.To(content.Name)
		changed = true
	}
	if st.CreationTime == nil && created != nil {
		st.CreationTime = created
		changed = true
	}
	if st.ReadyToUse == nil || *st.ReadyToUse != ready {
		st.ReadyToUse = ptr.To(ready)
		changed = true
		if ready {
			st.Error = nil
		}
	}
	if cs.RestoreSize != nil && (st.RestoreSize == nil || st.RestoreSize.IsZero() && *cs.RestoreSize > 0) {
		st.RestoreSize = resource.NewQuantity(*cs.RestoreSize, resource.BinarySI)
		changed = true
	}
	if !sameError(st.Error, cs.Error) {
		st.Error = cs.Error.DeepCopy()
		changed = true
	}
	if st.VolumeGroupSnapshotName == nil && group != "" {
		st.VolumeGroupSnapshotName = ptr.To(group)
		changed = true
	}
	if !changed {
		return nil, nil
	}
	var events []Event
	key := snapshot.Namespace + "/" + snapshot.Name
	if (old == nil || old.CreationTime == nil) && st.CreationTime != nil {
		events = append(events, normal("SnapshotCreated", fmt.Sprintf("Snapshot %s was successfully created by the CSI driver.", key)))
	}
	if (old == nil || !ptr.Deref(old.ReadyToUse, false)) && ready {
		events = append(events, normal("SnapshotReady", fmt.Sprintf("Snapshot %s is ready to use.", key)))
	}
	return &st, events
}

// sameError compares two errors by value (the reference compares the
// addresses of their times, which always differ, and so rewrites an
// unchanged error on every sync).
func sameError(a, b *snapv1.VolumeSnapshotError) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if ptr.Deref(a.Message, "") != ptr.Deref(b.Message, "") {
		return false
	}
	if a.Time == nil || b.Time == nil {
		return a.Time == nil && b.Time == nil
	}
	return a.Time.Equal(b.Time)
}

// NeedsMirror says whether the snapshot's status lags its content's, the
// reference's needsUpdateSnapshotStatus (the content loop requeues the
// snapshot then).
func NeedsMirror(snapshot *snapv1.VolumeSnapshot, content *snapv1.VolumeSnapshotContent) bool {
	st, _ := Mirror(snapshot, content, "")
	return st != nil
}

// withError is the status carrying message as its error (at now), with
// readyToUse false when setNotReady, as the reference's
// updateSnapshotErrorStatusWithEvent; nil when that message is already
// the snapshot's error (no write, no event).
func withError(snapshot *snapv1.VolumeSnapshot, now time.Time, setNotReady bool, message string) *snapv1.VolumeSnapshotStatus {
	if snapshot.Status != nil && snapshot.Status.Error != nil && ptr.Deref(snapshot.Status.Error.Message, "") == message {
		return nil
	}
	var st snapv1.VolumeSnapshotStatus
	if snapshot.Status != nil {
		st = *snapshot.Status.DeepCopy()
	}
	st.Error = &snapv1.VolumeSnapshotError{Time: &metav1.Time{Time: now}, Message: ptr.To(message)}
	if setNotReady {
		st.ReadyToUse = ptr.To(false)
	}
	return &st
}
