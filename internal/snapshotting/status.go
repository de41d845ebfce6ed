package snapshotting

import (
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/csierror"
)

// Answer is a snapshot as the driver reported it.
type Answer struct {
	ID string
	// Created is the driver's creation time; zero if it gave none.
	Created time.Time
	// SizeBytes is the restore size; 0 if unknown.
	SizeBytes int64
	Ready     bool
	// GroupID is the group snapshot's ID of a member; "" otherwise.
	GroupID string
}

// StatusFrom is the content's status once the driver answered a, as the
// reference's updateSnapshotContentStatus merges it: fields already set
// stay (but readyToUse follows the driver, and a ready snapshot clears the
// error), a creation time of zero is now. changed is false when the
// status is already that.
func StatusFrom(cur *snapv1.VolumeSnapshotContentStatus, a Answer, now time.Time) (st *snapv1.VolumeSnapshotContentStatus, changed bool) {
	created := a.Created
	if created.IsZero() {
		created = now
	}
	at := created.UnixNano()
	if cur == nil {
		st = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: &a.ID, ReadyToUse: &a.Ready, CreationTime: &at}
		if a.SizeBytes > 0 {
			st.RestoreSize = &a.SizeBytes
		}
		if a.GroupID != "" {
			st.VolumeGroupSnapshotHandle = &a.GroupID
		}
		return st, true
	}
	st = cur.DeepCopy()
	if st.SnapshotHandle == nil {
		st.SnapshotHandle, changed = &a.ID, true
	}
	if st.ReadyToUse == nil || *st.ReadyToUse != a.Ready {
		st.ReadyToUse, changed = &a.Ready, true
		if a.Ready {
			st.Error = nil
		}
	}
	if st.CreationTime == nil {
		st.CreationTime, changed = &at, true
	}
	if st.RestoreSize == nil && a.SizeBytes > 0 {
		st.RestoreSize, changed = &a.SizeBytes, true
	}
	if st.VolumeGroupSnapshotHandle == nil && a.GroupID != "" {
		st.VolumeGroupSnapshotHandle, changed = &a.GroupID, true
	}
	return st, changed
}

// ErrorStatus is the content's status with the error message at now and
// readyToUse false, as the reference's updateContentErrorStatusWithEvent
// writes it; changed is false when that message is already recorded (then
// neither the status nor the event is written again).
func ErrorStatus(cur *snapv1.VolumeSnapshotContentStatus, message string, now time.Time) (st *snapv1.VolumeSnapshotContentStatus, changed bool) {
	if cur != nil && cur.Error != nil && cur.Error.Message != nil && *cur.Error.Message == message {
		return cur, false
	}
	notReady := false
	e := &snapv1.VolumeSnapshotError{Time: &metav1.Time{Time: now}, Message: &message}
	if cur == nil {
		return &snapv1.VolumeSnapshotContentStatus{ReadyToUse: &notReady, Error: e}, true
	}
	st = cur.DeepCopy()
	st.Error, st.ReadyToUse = e, &notReady
	return st, true
}

// CreateFinal says whether a failed CreateSnapshot is over in the driver,
// so the being-created annotation may go: the reference's isCSIFinalError,
// whose transient codes (Canceled, DeadlineExceeded, Unavailable,
// ResourceExhausted, Aborted, and any error without a status) are exactly
// csierror.OperationFinal's.
func CreateFinal(err error) bool { return csierror.OperationFinal(err) }

// The reference's event reasons and messages on a content.
const (
	EventCreationFailed = "SnapshotCreationFailed"
	EventCheckFailed    = "SnapshotContentCheckandUpdateFailed"
	EventDeleteError    = "SnapshotDeleteError"

	MessageCreationFailed = "Failed to create snapshot: "
	MessageCheckFailed    = "Failed to check and update snapshot content: "
	MessageDeleteFailed   = "Failed to delete snapshot"
	MessageNoCredentials  = "Failed to get snapshot credentials"
)
