package grouping

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// CSIStep is what the sidecar's half does next for a group content: a
// closed set.
type CSIStep string

// The sidecar's steps.
const (
	// Idle: nothing to do; Err, if set, is why (retried with backoff).
	Idle CSIStep = "Idle"
	// MarkCreating sets GroupBeingCreated on the content before the first
	// CreateVolumeGroupSnapshot, so a timed-out call never leaks a group
	// snapshot: the content is not deleted while the mark is there.
	MarkCreating CSIStep = "MarkCreating"
	// Create calls CreateVolumeGroupSnapshot (Create, secrets Secret),
	// then writes AfterCreate's answer.
	Create CSIStep = "Create"
	// Get calls GetVolumeGroupSnapshot (Get, secrets Secret) for a
	// pre-provisioned content, then writes AfterGet's answer.
	Get CSIStep = "Get"
	// UnmarkCreating removes GroupBeingCreated.
	UnmarkCreating CSIStep = "UnmarkCreating"
	// Delete calls DeleteVolumeGroupSnapshot (Delete, secrets Secret), then
	// removes the content's finalizer.
	Delete CSIStep = "Delete"
	// RemoveContentFinalizer removes GroupContentFinalizer.
	RemoveContentFinalizer CSIStep = "RemoveContentFinalizer"
	// FailContent writes Status (the error) with the events.
	FailContent CSIStep = "FailContent"
)

// CSIPlan is DecideContent's answer.
type CSIPlan struct {
	Step CSIStep
	// Create, Get and Delete are the requests, without secrets: Secret
	// names the Secret whose data the loop adds (nil for none).
	Create *csi.CreateVolumeGroupSnapshotRequest
	Get    *csi.GetVolumeGroupSnapshotRequest
	Delete *csi.DeleteVolumeGroupSnapshotRequest
	Secret *v1.SecretReference
	// Status is the content's new status (FailContent).
	Status *vgsv1.VolumeGroupSnapshotContentStatus
	// Events are recorded on the content.
	Events []Event
	Err    error
}

func idle(err error) CSIPlan { return CSIPlan{Step: Idle, Err: err} }

// DecideContent is the sidecar's next step for a group content of a
// driver it serves (syncGroupSnapshotContent). class is the content's
// class (nil if it names none or it is gone).
func DecideContent(c *vgsv1.VolumeGroupSnapshotContent, class *vgsv1.VolumeGroupSnapshotClass, now time.Time) CSIPlan {
	if c.DeletionTimestamp != nil && answeredYetMarked(c) {
		// The create answered (its handle is recorded) but the mark's
		// removal was lost (a crash or a failed write between the two):
		// the mark would hold the deletion for ever, since a ready content
		// is never asked again. The reference waits here for ever too.
		return CSIPlan{Step: UnmarkCreating}
	}
	if shouldDelete(c) {
		if c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete && c.Status != nil && c.Status.VolumeGroupSnapshotHandle != nil {
			secret, err := DeletionSecret(c)
			if err != nil {
				return CSIPlan{Step: Idle, Events: []Event{warning("GroupSnapshotDeleteError", "Failed to get snapshot credentials")},
					Err: fmt.Errorf("failed to get input parameters to delete group snapshot for group snapshot content %s: %q", c.Name, err)}
			}
			return CSIPlan{Step: Delete, Secret: secret, Delete: &csi.DeleteVolumeGroupSnapshotRequest{
				GroupSnapshotId: *c.Status.VolumeGroupSnapshotHandle, SnapshotIds: memberIDs(c),
			}}
		}
		if slices.Contains(c.Finalizers, snapshotapi.GroupContentFinalizer) {
			return CSIPlan{Step: RemoveContentFinalizer}
		}
		return idle(nil)
	}
	if c.DeletionTimestamp != nil {
		if settle, ok := settleCreate(c, class); ok {
			return settle
		}
		// Being deleted, but its group has not let go yet: wait for the
		// snapshot-controller's mark.
		return idle(nil)
	}
	ready := c.Status != nil && c.Status.ReadyToUse != nil && *c.Status.ReadyToUse
	if ready {
		if _, ok := c.Annotations[snapshotapi.GroupBeingCreated]; ok {
			return CSIPlan{Step: UnmarkCreating}
		}
		return idle(nil)
	}
	if h := c.Spec.Source.GroupSnapshotHandles; h != nil {
		var secret *v1.SecretReference
		if class != nil {
			s, err := SecretRef(class.Parameters, snapshotapi.GroupGetSecretNameParameter, snapshotapi.GroupGetSecretNamespaceParameter, c.Name, nil)
			if err != nil {
				return failContent(c, now, "GroupSnapshotContentCheckandUpdateFailed", fmt.Sprintf("Failed to check and update group snapshot content: %v",
					fmt.Errorf("failed to get secret reference for group snapshot content %s: %v", c.Name, err)))
			}
			secret = s
		} else if c.Spec.VolumeGroupSnapshotClassName != nil {
			return idle(fmt.Errorf("group snapshot class %s of group snapshot content %s not found", *c.Spec.VolumeGroupSnapshotClassName, c.Name))
		}
		return CSIPlan{Step: Get, Secret: secret, Get: &csi.GetVolumeGroupSnapshotRequest{
			GroupSnapshotId: h.VolumeGroupSnapshotHandle, SnapshotIds: slices.Clone(h.VolumeSnapshotHandles),
		}}
	}
	if len(c.Spec.Source.VolumeHandles) == 0 {
		return idle(nil) // the snapshot-controller reports it (GroupContentValidationError)
	}
	if c.Spec.VolumeGroupSnapshotClassName == nil {
		return failContent(c, now, "GroupSnapshotCreationFailed", fmt.Sprintf("Failed to create group snapshot: %v",
			fmt.Errorf("failed to get input parameters to create group snapshot for group snapshot content %s: %q", c.Name,
				fmt.Errorf("failed to take group snapshot %s without a group snapshot class", c.Name))))
	}
	if class == nil {
		return idle(fmt.Errorf("group snapshot class %s of group snapshot content %s not found", *c.Spec.VolumeGroupSnapshotClassName, c.Name))
	}
	if c.Spec.VolumeGroupSnapshotRef.UID == "" {
		return idle(fmt.Errorf("cannot create group snapshot. Group snapshot content %s not bound to a group snapshot", c.Name))
	}
	secret, err := DeletionSecret(c)
	if err != nil {
		return failContent(c, now, "GroupSnapshotCreationFailed", fmt.Sprintf("Failed to create group snapshot: %v",
			fmt.Errorf("failed to get input parameters to create group snapshot for group snapshot content %s: %q", c.Name, err)))
	}
	if _, ok := c.Annotations[snapshotapi.GroupBeingCreated]; !ok {
		return CSIPlan{Step: MarkCreating}
	}
	return CSIPlan{Step: Create, Secret: secret, Create: CreateRequest(c, class)}
}

// settleCreate is the step for a content being deleted while its create may
// still run in the driver (GroupBeingCreated, no handle yet): ask again
// with the same request, as the reference's sidecar does, until the driver
// answers with the group (then deleted under Delete) or a final error
// (nothing was made). Waiting instead would hold the content forever: the
// mark goes only with an answer.
func settleCreate(c *vgsv1.VolumeGroupSnapshotContent, class *vgsv1.VolumeGroupSnapshotClass) (CSIPlan, bool) {
	if _, creating := c.Annotations[snapshotapi.GroupBeingCreated]; !creating || len(c.Spec.Source.VolumeHandles) == 0 ||
		(c.Status != nil && c.Status.VolumeGroupSnapshotHandle != nil) {
		return CSIPlan{}, false
	}
	if class == nil {
		return idle(fmt.Errorf("group snapshot content %s is being deleted while its create may run: its class is gone", c.Name)), true
	}
	secret, err := DeletionSecret(c)
	if err != nil {
		return idle(fmt.Errorf("group snapshot content %s: %w", c.Name, err)), true
	}
	return CSIPlan{Step: Create, Secret: secret, Create: CreateRequest(c, class)}, true
}

// answeredYetMarked says the content still carries GroupBeingCreated
// though its status records the group the create made.
func answeredYetMarked(c *vgsv1.VolumeGroupSnapshotContent) bool {
	_, creating := c.Annotations[snapshotapi.GroupBeingCreated]
	return creating && c.Status != nil && c.Status.VolumeGroupSnapshotHandle != nil
}

// shouldDelete is shouldDeleteGroupSnapshotContent: a content being
// deleted whose group let go (the being-deleted mark) and whose create is
// not in flight, or a pre-provisioned content never bound.
func shouldDelete(c *vgsv1.VolumeGroupSnapshotContent) bool {
	if c.DeletionTimestamp == nil {
		return false
	}
	if c.Spec.Source.GroupSnapshotHandles != nil && c.Spec.VolumeGroupSnapshotRef.UID == "" {
		return true
	}
	if _, ok := c.Annotations[snapshotapi.GroupBeingCreated]; ok {
		return false
	}
	_, ok := c.Annotations[snapshotapi.GroupBeingDeleted]
	return ok
}

// memberIDs are the snapshot IDs DeleteVolumeGroupSnapshot takes: those
// the driver listed, else those of a pre-provisioned content.
func memberIDs(c *vgsv1.VolumeGroupSnapshotContent) []string {
	var ids []string
	if c.Status != nil {
		for _, i := range c.Status.VolumeSnapshotInfoList {
			ids = append(ids, i.SnapshotHandle)
		}
	}
	if len(ids) == 0 && c.Spec.Source.GroupSnapshotHandles != nil {
		ids = slices.Clone(c.Spec.Source.GroupSnapshotHandles.VolumeSnapshotHandles)
	}
	return ids
}

// CreateRequest is the CreateVolumeGroupSnapshot request for a dynamic
// content: name groupsnapshot-<group uid>, the content's source volumes,
// the class's parameters without the csi.storage.k8s.io/ ones, plus the
// extra create metadata (the group's name and namespace, the content's
// name). Secrets are the loop's to add.
func CreateRequest(c *vgsv1.VolumeGroupSnapshotContent, class *vgsv1.VolumeGroupSnapshotClass) *csi.CreateVolumeGroupSnapshotRequest {
	params := map[string]string{}
	if class != nil {
		for k, v := range class.Parameters {
			if !strings.HasPrefix(k, snapshotapi.ParameterPrefix) {
				params[k] = v
			}
		}
	}
	params[snapshotapi.GroupSnapshotNameKey] = c.Spec.VolumeGroupSnapshotRef.Name
	params[snapshotapi.GroupSnapshotNamespaceKey] = c.Spec.VolumeGroupSnapshotRef.Namespace
	params[snapshotapi.GroupSnapshotContentNameKey] = c.Name
	return &csi.CreateVolumeGroupSnapshotRequest{
		Name:            snapshotapi.GroupBackendName(c.Spec.VolumeGroupSnapshotRef.UID),
		SourceVolumeIds: slices.Clone(c.Spec.Source.VolumeHandles),
		Parameters:      params,
	}
}

// AfterCreate is the content's status after CreateVolumeGroupSnapshot
// answered (updateGroupSnapshotContentStatus): the group handle, ready,
// creation time (now when the driver gives none) and, written once, every
// member snapshot. unmark says whether GroupBeingCreated goes: on success
// and on a final error; a transient error keeps it (the call may still
// run in the driver). On error, the status carries it and events say so.
func AfterCreate(c *vgsv1.VolumeGroupSnapshotContent, answer *csi.VolumeGroupSnapshot, callErr error, now time.Time) (st *vgsv1.VolumeGroupSnapshotContentStatus, events []Event, unmark bool) {
	if callErr != nil {
		msg := fmt.Sprintf("Failed to create group snapshot: %v", fmt.Errorf("failed to take group snapshot of the volumes %s: %q", c.Spec.Source.VolumeHandles, callErr))
		p := failContent(c, now, "GroupSnapshotCreationFailed", msg)
		return errorStatus(c, p), p.Events, csierror.OperationFinal(callErr)
	}
	return withAnswer(c, answer.GetGroupSnapshotId(), answer.GetReadyToUse(), answer.GetCreationTime(), answer.GetSnapshots(), now), nil, true
}

// AfterGet is the pre-provisioned content's status after
// GetVolumeGroupSnapshot (no member list, as the reference).
func AfterGet(c *vgsv1.VolumeGroupSnapshotContent, answer *csi.VolumeGroupSnapshot, callErr error, now time.Time) (*vgsv1.VolumeGroupSnapshotContentStatus, []Event) {
	if callErr != nil {
		p := failContent(c, now, "GroupSnapshotContentCheckandUpdateFailed", fmt.Sprintf("Failed to check and update group snapshot content: %v", callErr))
		return errorStatus(c, p), p.Events
	}
	return withAnswer(c, c.Spec.Source.GroupSnapshotHandles.VolumeGroupSnapshotHandle, answer.GetReadyToUse(), answer.GetCreationTime(), nil, now), nil
}

type timestamp interface {
	GetSeconds() int64
	GetNanos() int32
}

func withAnswer(c *vgsv1.VolumeGroupSnapshotContent, handle string, ready bool, created timestamp, snaps []*csi.Snapshot, now time.Time) *vgsv1.VolumeGroupSnapshotContentStatus {
	at := now
	if created != nil && (created.GetSeconds() != 0 || created.GetNanos() != 0) {
		at = time.Unix(created.GetSeconds(), int64(created.GetNanos()))
	}
	st := &vgsv1.VolumeGroupSnapshotContentStatus{}
	if c.Status != nil {
		st = c.Status.DeepCopy()
	}
	if st.VolumeGroupSnapshotHandle == nil {
		st.VolumeGroupSnapshotHandle = ptr(handle)
	}
	if st.ReadyToUse == nil || *st.ReadyToUse != ready {
		st.ReadyToUse = ptr(ready)
		if ready {
			st.Error = nil
		}
	}
	if st.CreationTime == nil {
		st.CreationTime = &metav1.Time{Time: at}
	}
	if len(st.VolumeSnapshotInfoList) == 0 {
		for _, s := range snaps {
			info := vgsv1.VolumeSnapshotInfo{VolumeHandle: s.GetSourceVolumeId(), SnapshotHandle: s.GetSnapshotId(), ReadyToUse: ptr(s.GetReadyToUse())}
			if t := s.GetCreationTime(); t != nil {
				info.CreationTime = ptr(time.Unix(t.GetSeconds(), int64(t.GetNanos())).UnixNano())
			}
			if s.GetSizeBytes() > 0 {
				info.RestoreSize = ptr(s.GetSizeBytes())
			}
			st.VolumeSnapshotInfoList = append(st.VolumeSnapshotInfoList, info)
		}
	}
	return st
}

// errorStatus is the content's status after a failed call: failContent's,
// or, when the status already carries the same error (failContent wrote
// nothing), the status as it is. Never nil for a content that has one: a
// nil status written back would clear the error, and the next failure
// would write it again, each write's event asking for another call at
// once, whatever the backoff (soak: a group the driver kept refusing
// was asked every ~20 ms).
func errorStatus(c *vgsv1.VolumeGroupSnapshotContent, p CSIPlan) *vgsv1.VolumeGroupSnapshotContentStatus {
	if p.Status != nil || c.Status == nil {
		return p.Status
	}
	return c.Status.DeepCopy()
}

// failContent writes the error into the content's status (readyToUse
// false) with an event (updateGroupSnapshotContentErrorStatusWithEvent);
// a status that already carries the message is not written again.
func failContent(c *vgsv1.VolumeGroupSnapshotContent, now time.Time, reason, message string) CSIPlan {
	err := fmt.Errorf("%s: %s", reason, message)
	if c.Status != nil && c.Status.Error != nil && c.Status.Error.Message != nil && *c.Status.Error.Message == message {
		return idle(err)
	}
	st := &vgsv1.VolumeGroupSnapshotContentStatus{}
	if c.Status != nil {
		st = c.Status.DeepCopy()
	}
	msg := message
	st.Error = &snapv1.VolumeSnapshotError{Time: &metav1.Time{Time: now}, Message: &msg}
	st.ReadyToUse = ptr(false)
	return CSIPlan{Step: FailContent, Status: st, Events: []Event{warning(reason, message)}, Err: err}
}

// DeleteFailed is the event for a failed DeleteVolumeGroupSnapshot.
func DeleteFailed() Event {
	return warning("GroupSnapshotDeleteError", "Failed to delete group snapshot")
}

// CreateRefused is the status and events for a group the loop cannot ask
// the driver for (no single endpoint holds its volumes, its secret cannot
// be read): GroupSnapshotCreationFailed, as a failed create. Status is
// never nil for a content that has one (errorStatus): the same refusal
// again leaves it as it is. It was once nil then, and the loop wrote the
// refusal back empty: every other sync of a refused group cleared its
// error (the flake of TestGroupNoEndpointHoldsRefused, status nil after
// 30 s: written, cleared, written again after each doubled backoff).
func CreateRefused(c *vgsv1.VolumeGroupSnapshotContent, err error, now time.Time) CSIPlan {
	p := failContent(c, now, "GroupSnapshotCreationFailed", fmt.Sprintf("Failed to create group snapshot: %v", err))
	p.Status = errorStatus(c, p)
	return p
}
