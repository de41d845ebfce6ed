package mounting

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's attach limit (MutableCSINodeAllocatableCount, GA in 1.36):
// a driver whose CSIDriver sets nodeAllocatableUpdatePeriodSeconds has its
// node's CSINode allocatable count refreshed from NodeGetInfo every period
// (pkg/volume/csi/csi_node_updater.go: runPeriodicUpdate), and at once when
// one of the node's attachments failed with ResourceExhausted
// (csi_plugin.go: VerifyExhaustedResource, updateCSIDriver); a pod still
// waiting for such an attachment when its attach-and-mount wait ends is
// rejected (pkg/kubelet/kubelet.go: SyncPod, rejectPod).

// VolumeAttachmentLimitExceeded is the kubelet's reason for a pod rejected
// because the node has no room for its attachment
// (volumemanager.VolumeAttachmentLimitExceededReason): the pod's
// status.reason and its Warning event's reason.
const VolumeAttachmentLimitExceeded = "VolumeAttachmentLimitExceeded"

// PodAttachAndMountTimeout is how long the kubelet waits for a pod's
// volumes to attach and mount before it looks at why
// (volume_manager.go: podAttachAndMountTimeout).
const PodAttachAndMountTimeout = 2*time.Minute + 3*time.Second

// MinAllocatableUpdatePeriod is the least nodeAllocatableUpdatePeriodSeconds
// the API accepts (validateNodeAllocatableUpdatePeriodSeconds); a smaller
// value, which only a server that skipped that validation could hold, is
// raised to it, so no CSIDriver makes the agent call NodeGetInfo in a hot
// loop.
const MinAllocatableUpdatePeriod = 10 * time.Second

// Refresh says why a driver's allocatable count is asked of it now, or why
// not. The set is closed; logs and tests use the same values.
type Refresh string

const (
	// RefreshPeriodic: the driver's period has passed since the last ask.
	RefreshPeriodic Refresh = "Periodic"
	// RefreshAttachExhausted: an attachment of the node failed with
	// ResourceExhausted since the last ask.
	RefreshAttachExhausted Refresh = "AttachResourceExhausted"
	// NotDue: the period has not passed and no attachment failed since.
	NotDue Refresh = "NotDue"
	// NoUpdatePeriod: the driver has no CSIDriver or it sets no
	// nodeAllocatableUpdatePeriodSeconds: the kubelet never refreshes it,
	// not even after a ResourceExhausted attachment.
	NoUpdatePeriod Refresh = "NoUpdatePeriod"
)

// Asks says whether the driver is asked now.
func (r Refresh) Asks() bool { return r == RefreshPeriodic || r == RefreshAttachExhausted }

// UpdatePeriod is the CSIDriver's nodeAllocatableUpdatePeriodSeconds, at
// least MinAllocatableUpdatePeriod; 0 for a missing driver or no period.
func UpdatePeriod(d *storagev1.CSIDriver) time.Duration {
	if d == nil || d.Spec.NodeAllocatableUpdatePeriodSeconds == nil {
		return 0
	}
	return max(time.Duration(*d.Spec.NodeAllocatableUpdatePeriodSeconds)*time.Second, MinAllocatableUpdatePeriod)
}

// AllocatableState is what the agent remembers of one driver of one
// node: the period it last saw and when that period began (the last ask,
// or when the period was first seen or changed: the kubelet restarts its
// ticker then), and whether an attachment failed with ResourceExhausted
// since. The zero value is a driver not seen yet.
type AllocatableState struct {
	Period    time.Duration
	Since     time.Time
	Exhausted bool
}

// DecideRefresh says whether a driver's allocatable count is asked now,
// the state to keep once that is done, and after how long to look again
// (0: only when an event says so). now is the agent's clock.
func DecideRefresh(d *storagev1.CSIDriver, st AllocatableState, now time.Time) (Refresh, AllocatableState, time.Duration) {
	period := UpdatePeriod(d)
	restarted := AllocatableState{Period: period, Since: now}
	switch {
	case period == 0:
		return NoUpdatePeriod, AllocatableState{}, 0
	case st.Exhausted:
		return RefreshAttachExhausted, restarted, period
	case st.Period != period:
		// First seen, or the period changed: the ticker (re)starts and
		// asks one period later.
		return NotDue, restarted, period
	}
	if next := st.Since.Add(period); now.Before(next) {
		return NotDue, st, next.Sub(now)
	}
	return RefreshPeriodic, restarted, period
}

// ExhaustedFailure names an attachment's failure if the attacher recorded
// it with code ResourceExhausted and the volume is not attached: the
// attachment, and the time of the error, so that one failure is acted on
// once and a new failure (the attacher's next try) again. "" for none.
func ExhaustedFailure(va *storagev1.VolumeAttachment) string {
	if va == nil || va.Status.Attached || !exhausted(va) {
		return ""
	}
	return va.Name + "@" + va.Status.AttachError.Time.UTC().Format(time.RFC3339Nano)
}

// exhausted is the kubelet's isResourceExhaustError.
func exhausted(va *storagev1.VolumeAttachment) bool {
	e := va.Status.AttachError
	return e != nil && e.ErrorCode != nil && *e.ErrorCode == int32(codes.ResourceExhausted)
}

// AttachLimitRejection is the kubelet's rejection of a pod whose
// attach-and-mount wait ended (waitedOut) while a volume was not attached
// because the node has no room for it: the volume's CSIDriver sets an
// update period and its VolumeAttachment on this node failed with
// ResourceExhausted (VerifyExhaustedResource). It returns the message of
// the event and of the pod's status ("" for no rejection).
func (p PodPlan) AttachLimitRejection(w World, waitedOut bool) string {
	if !waitedOut || p.Ready() || !p.WaitsForExhausted(w) {
		return ""
	}
	var unmounted, unattached, failed []string
	for _, s := range p.Steps {
		if !s.Action.published() {
			unmounted = append(unmounted, s.Name)
		}
		if s.Action == Wait && s.Reason.processingFailed() {
			failed = append(failed, s.Name)
		}
		if s.Action == Wait && (s.Reason == NotAttached || s.Reason == NotReportedInUse) {
			unattached = append(unattached, s.Name)
		}
	}
	slices.Sort(unmounted)
	slices.Sort(unattached)
	slices.Sort(failed)
	// The wait ends on its deadline: the kubelet's OriginalError.
	return fmt.Sprintf("Node has reached its volume attachment limit, rejecting pod. unmounted volumes=%v, unattached volumes=%v, failed to process volumes=%v: %v",
		unmounted, unattached, failed, "context deadline exceeded")
}

// WaitsForExhausted says whether one of the pod's volumes waits for an
// attachment of this node that failed with ResourceExhausted, for a driver
// whose CSIDriver sets an update period: what the kubelet rejects the pod
// for once its wait ends.
func (p PodPlan) WaitsForExhausted(w World) bool {
	for _, s := range p.Steps {
		if s.Action != Wait || s.Reason != NotAttached || s.Volume == nil || !s.Volume.Attachable {
			continue
		}
		va := w.Attachments[s.Volume.Attachment]
		if va == nil || va.Spec.NodeName != w.Node || va.Spec.Attacher != s.Volume.Driver {
			continue
		}
		if UpdatePeriod(w.CSIDrivers[s.Volume.Driver]) > 0 && ExhaustedFailure(va) != "" {
			return true
		}
	}
	return false
}

// WaitsForAttach says whether the pod waits for one of its volumes to be
// attached: the kubelet's attach-and-mount wait runs.
func (p PodPlan) WaitsForAttach() bool {
	for _, s := range p.Steps {
		if s.Action == Wait && (s.Reason == NotAttached || s.Reason == NotReportedInUse) {
			return true
		}
	}
	return false
}

// RejectedStatus is the pod's status once the kubelet rejected it
// (rejectPod): phase Failed, the reason, "Pod was rejected: " and the
// message; its QoS class is kept, and the conditions the kubelet does not
// own (its status manager's mergePodStatus).
func RejectedStatus(pod *corev1.Pod, reason, message string, now metav1.Time) *corev1.Pod {
	upd := pod.DeepCopy()
	upd.Status = corev1.PodStatus{QOSClass: pod.Status.QOSClass, Phase: corev1.PodFailed, Reason: reason,
		Message: "Pod was rejected: " + message, StartTime: upd.Status.StartTime}
	for _, c := range pod.Status.Conditions {
		if !slices.Contains(kubeletConditions, c.Type) {
			upd.Status.Conditions = append(upd.Status.Conditions, c)
		}
	}
	if upd.Status.StartTime == nil {
		upd.Status.StartTime = &now
	}
	return upd
}

// kubeletConditions are the pod conditions the kubelet owns
// (pkg/kubelet/types: PodConditionsByKubelet, with
// PodReadyToStartContainers, on by default).
var kubeletConditions = []corev1.PodConditionType{corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized,
	corev1.ContainersReady, corev1.PodResizeInProgress, corev1.PodResizePending, corev1.PodReadyToStartContainers}
