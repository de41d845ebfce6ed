package modification

import (
	"fmt"
	"slices"

	"github.com/volplane/volplane/internal/csierror"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The steps below never modify their arguments (they may come from an
// informer cache). Each returns a changed deep copy, or nil when the object
// already is in the wanted state. A condition already there with the same
// status, reason and message is kept as it is, probe time included, so a
// repeated step is nil; now stamps the conditions that change.

// MarkModifyInProgress starts a modification to the spec class: status
// InProgress with that target, condition ModifyingVolume=True "Modifying
// volume to "<class>" is in progress." (a ModifyVolumeError of an earlier
// attempt stays until the modification ends).
func MarkModifyInProgress(claim *v1.PersistentVolumeClaim, now metav1.Time) *v1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	target := SpecClass(claim)
	out.Status.ModifyVolumeStatus = &v1.ModifyVolumeStatus{
		Status: v1.PersistentVolumeClaimModifyVolumeInProgress, TargetVolumeAttributesClassName: target}
	out.Status.Conditions = mergeConditions(claim.Status.Conditions, now,
		modifying(fmt.Sprintf("Modifying volume to %q is in progress.", target)))
	return changed(claim, out)
}

// MarkModifyFailed records a failed ControllerModifyVolume for the status
// target: Infeasible when infeasible (IsInfeasible), else InProgress;
// condition ModifyingVolume "... failed. Waiting for retry." for a final
// error or "... is still in progress." for one the driver may still be
// working on, and ModifyVolumeError with the gRPC code as reason and its
// message.
func MarkModifyFailed(claim *v1.PersistentVolumeClaim, err error, infeasible bool, now metav1.Time) *v1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	if out.Status.ModifyVolumeStatus == nil {
		out.Status.ModifyVolumeStatus = &v1.ModifyVolumeStatus{}
	}
	st := out.Status.ModifyVolumeStatus
	st.Status = v1.PersistentVolumeClaimModifyVolumeInProgress
	if infeasible {
		st.Status = v1.PersistentVolumeClaimModifyVolumeInfeasible
	}
	msg := fmt.Sprintf("Modifying volume to %q is still in progress.", st.TargetVolumeAttributesClassName)
	if csierror.OperationFinal(err) { // the external-resizer's IsFinalError: the driver stopped working on it
		msg = fmt.Sprintf("Modifying volume to %q failed. Waiting for retry.", st.TargetVolumeAttributesClassName)
	}
	grpc, _ := status.FromError(err)
	out.Status.Conditions = mergeConditions(claim.Status.Conditions, now, modifying(msg), v1.PersistentVolumeClaimCondition{
		Type: v1.PersistentVolumeClaimVolumeModifyVolumeError, Status: v1.ConditionTrue,
		Reason: grpc.Code().String(), Message: grpc.Message()})
	return changed(claim, out)
}

// MarkModifyUnsupported marks a modification to the spec class that the
// driver cannot make at all (UnsupportedError): Infeasible, as a final
// failure.
func MarkModifyUnsupported(claim *v1.PersistentVolumeClaim, driver string, now metav1.Time) *v1.PersistentVolumeClaim {
	targeted := claim.DeepCopy()
	if targeted.Status.ModifyVolumeStatus == nil {
		targeted.Status.ModifyVolumeStatus = &v1.ModifyVolumeStatus{}
	}
	targeted.Status.ModifyVolumeStatus.TargetVolumeAttributesClassName = SpecClass(claim)
	if out := MarkModifyFailed(targeted, UnsupportedError(driver), true, now); out != nil {
		return out
	}
	return changed(claim, targeted)
}

// MarkModifyPending records that the target class does not exist: status
// Pending, its target and the conditions as they are (the reference's).
func MarkModifyPending(claim *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	if out.Status.ModifyVolumeStatus == nil {
		out.Status.ModifyVolumeStatus = &v1.ModifyVolumeStatus{}
	}
	out.Status.ModifyVolumeStatus.Status = v1.PersistentVolumeClaimModifyVolumePending
	return changed(claim, out)
}

// MarkModifyFinished ends the modification to the status target: no
// modifyVolumeStatus, current class = target, ModifyingVolume and
// ModifyVolumeError gone. It is nil for a claim with nothing in progress.
func MarkModifyFinished(claim *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	if claim.Status.ModifyVolumeStatus == nil {
		return nil
	}
	out := claim.DeepCopy()
	target := claim.Status.ModifyVolumeStatus.TargetVolumeAttributesClassName
	out.Status.ModifyVolumeStatus = nil
	out.Status.CurrentVolumeAttributesClassName = &target
	out.Status.Conditions = withoutConditions(out.Status.Conditions,
		v1.PersistentVolumeClaimVolumeModifyingVolume, v1.PersistentVolumeClaimVolumeModifyVolumeError)
	return changed(claim, out)
}

// MarkRolledBack cancels: the ModifyingVolume condition goes, the status
// stays (it records the last attempt).
func MarkRolledBack(claim *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	out.Status.Conditions = withoutConditions(out.Status.Conditions, v1.PersistentVolumeClaimVolumeModifyingVolume)
	return changed(claim, out)
}

// VolumeWithClass is the PV with spec.volumeAttributesClassName = class,
// or nil if it has that class.
func VolumeWithClass(pv *v1.PersistentVolume, class string) *v1.PersistentVolume {
	if pv.Spec.VolumeAttributesClassName != nil && *pv.Spec.VolumeAttributesClassName == class {
		return nil
	}
	out := pv.DeepCopy()
	out.Spec.VolumeAttributesClassName = &class
	return out
}

func modifying(msg string) v1.PersistentVolumeClaimCondition {
	return v1.PersistentVolumeClaimCondition{Type: v1.PersistentVolumeClaimVolumeModifyingVolume, Status: v1.ConditionTrue, Message: msg}
}

// mergeConditions replaces the conditions of the types given and keeps the
// others, in order. A condition equal to the one it replaces (status,
// reason, message) is kept with its times; a changed one gets now as probe
// time, and as transition time if its status or reason changed (as the
// reference's MergePVCConditions).
func mergeConditions(old []v1.PersistentVolumeClaimCondition, now metav1.Time, set ...v1.PersistentVolumeClaimCondition) []v1.PersistentVolumeClaimCondition {
	out := make([]v1.PersistentVolumeClaimCondition, 0, len(old)+len(set))
	placed := map[v1.PersistentVolumeClaimConditionType]bool{}
	for _, o := range old {
		i := slices.IndexFunc(set, func(c v1.PersistentVolumeClaimCondition) bool { return c.Type == o.Type })
		if i < 0 {
			out = append(out, o)
			continue
		}
		out = append(out, merged(o, set[i], now))
		placed[o.Type] = true
	}
	for _, c := range set {
		if !placed[c.Type] {
			c.LastProbeTime, c.LastTransitionTime = now, now
			out = append(out, c)
		}
	}
	return out
}

func merged(old, c v1.PersistentVolumeClaimCondition, now metav1.Time) v1.PersistentVolumeClaimCondition {
	if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return old
	}
	c.LastProbeTime, c.LastTransitionTime = now, old.LastTransitionTime
	if old.Status != c.Status || old.Reason != c.Reason {
		c.LastTransitionTime = now
	}
	return c
}

func withoutConditions(cs []v1.PersistentVolumeClaimCondition, types ...v1.PersistentVolumeClaimConditionType) []v1.PersistentVolumeClaimCondition {
	out := slices.DeleteFunc(slices.Clone(cs), func(c v1.PersistentVolumeClaimCondition) bool { return slices.Contains(types, c.Type) })
	if len(out) == 0 {
		return nil
	}
	return out
}

// changed is out, or nil if it equals claim.
func changed(claim, out *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	if apiequality.Semantic.DeepEqual(claim, out) {
		return nil
	}
	return out
}
