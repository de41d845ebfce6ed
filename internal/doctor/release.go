package doctor

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/protection"
)

// Refusal is why `volplane release pv` will not release a volume. The set
// is closed.
type Refusal string

const (
	RefuseNotFound     Refusal = "not-found"
	RefuseBeingDeleted Refusal = "being-deleted"
	RefuseNotRetain    Refusal = "not-retain"
	RefuseNotReleased  Refusal = "not-released"
	RefuseNoClaimRef   Refusal = "no-claim-ref"
	RefuseClaimExists  Refusal = "claim-exists"
	// RefuseAttached: a VolumeAttachment still attaches the volume.
	RefuseAttached Refusal = "attached"
	// RefuseMounted: a node still reports the volume in use.
	RefuseMounted Refusal = "mounted"
	// RefuseNamedByPod: a pod that may hold the old claim's mount names it.
	RefuseNamedByPod Refusal = "named-by-pod"
	// RefuseTargetDeleting: the claim of --to is being deleted.
	RefuseTargetDeleting Refusal = "target-deleting"
	// RefuseTargetBound: the claim of --to is bound to another volume.
	RefuseTargetBound Refusal = "target-bound"
)

// ReleaseInput is what a release is decided on, all read live.
type ReleaseInput struct {
	// Name is the volume asked for; Volume is it (nil: it does not exist).
	Name   string
	Volume *v1.PersistentVolume
	// Claim is the claim of the claimRef's namespace and name (nil: none).
	// Only a claim with the claimRef's UID holds the volume; one of the
	// same name and another UID is a new claim.
	Claim *v1.PersistentVolumeClaim
	// Attachments and Nodes are every VolumeAttachment and node; Pods are
	// the pods of the claimRef's namespace.
	Attachments []*storagev1.VolumeAttachment
	Nodes       []*v1.Node
	Pods        []*v1.Pod
	// To is the claim to pre-bind the volume to (zero: release it to any
	// claim that fits); Target is that claim (nil: it does not exist yet).
	To     types.NamespacedName
	Target *v1.PersistentVolumeClaim
}

// ReleaseDecision is whether a volume may be released, why, and how.
type ReleaseDecision struct {
	// Refusal is "" when the release may go ahead.
	Refusal Refusal
	// Reason is a sentence for people: why not, or what the release does.
	Reason string
	// ClaimRef is the volume's claimRef to be: nil releases it to any claim
	// that fits, else it pre-binds it to one claim.
	ClaimRef *v1.ObjectReference
}

// DecideRelease decides whether the volume may have its claimRef cleared
// (or, with To, set to one named claim). It refuses while the old claim
// exists, and while anything may still reach the old tenant's data
// through a mount: a VolumeAttachment of the volume, a node reporting it
// in use, a scheduled pod that may hold the old claim.
func DecideRelease(in ReleaseInput) ReleaseDecision {
	pv := in.Volume
	refuse := func(r Refusal, format string, args ...any) ReleaseDecision {
		return ReleaseDecision{Refusal: r, Reason: fmt.Sprintf("persistentvolume %s: ", in.Name) + fmt.Sprintf(format, args...)}
	}
	if pv == nil {
		return refuse(RefuseNotFound, "not found")
	}
	ref := pv.Spec.ClaimRef
	switch {
	case pv.DeletionTimestamp != nil:
		return refuse(RefuseBeingDeleted, "it is being deleted")
	case pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain:
		return refuse(RefuseNotRetain, "its reclaim policy is %s, not Retain: the reclaim loop, not a person, frees it", pv.Spec.PersistentVolumeReclaimPolicy)
	case pv.Status.Phase != v1.VolumeReleased:
		return refuse(RefuseNotReleased, "it is %s, not Released", phaseOf(pv))
	case ref == nil:
		return refuse(RefuseNoClaimRef, "it has no claimRef to clear")
	case in.Claim != nil && (ref.UID == "" || in.Claim.UID == ref.UID):
		return refuse(RefuseClaimExists, "its claim %s/%s still exists; delete the claim first, or use it", ref.Namespace, ref.Name)
	}
	if r, why := stillReached(in); r != "" {
		return refuse(r, "%s; release it once nothing mounts it", why)
	}
	why := fmt.Sprintf("claim %s/%s (uid %s) is gone", ref.Namespace, ref.Name, ref.UID)
	if in.Claim != nil {
		why = fmt.Sprintf("claim %s/%s (uid %s) is gone; the claim of that name now is a new one (uid %s)",
			ref.Namespace, ref.Name, ref.UID, in.Claim.UID)
	}
	if in.To == (types.NamespacedName{}) {
		return ReleaseDecision{Reason: why + "; any claim that fits, in any namespace, may now bind it and read its data"}
	}
	return preBind(in, refuse, why)
}

// stillReached says what may still reach the volume's data: an
// attachment, a mount its node reports, or a scheduled pod that may hold
// the old claim (one made before the claim of that name now, if any).
func stillReached(in ReleaseInput) (Refusal, string) {
	pv, ref := in.Volume, in.Volume.Spec.ClaimRef
	for _, va := range in.Attachments {
		if src := va.Spec.Source.PersistentVolumeName; src != nil && *src == pv.Name {
			return RefuseAttached, fmt.Sprintf("VolumeAttachment %s attaches it to node %s", va.Name, va.Spec.NodeName)
		}
	}
	if csi := pv.Spec.CSI; csi != nil {
		unique := attachment.UniqueVolumeName(csi.Driver, csi.VolumeHandle)
		for _, n := range in.Nodes {
			if slices.Contains(n.Status.VolumesInUse, unique) {
				return RefuseMounted, fmt.Sprintf("node %s reports it in use (mounted)", n.Name)
			}
		}
	}
	key := binding.ClaimRefKey(ref)
	for _, pod := range in.Pods {
		if pod.Namespace != ref.Namespace || pod.Spec.NodeName == "" || binding.PodTerminated(pod) ||
			!slices.Contains(protection.ClaimKeys(pod), key) {
			continue
		}
		if in.Claim == nil || pod.CreationTimestamp.Before(&in.Claim.CreationTimestamp) {
			return RefuseNamedByPod, fmt.Sprintf("pod %s/%s on node %s names claim %s and may still have it mounted",
				pod.Namespace, pod.Name, pod.Spec.NodeName, key)
		}
	}
	return "", ""
}

// preBind decides the claimRef of a release to one named claim: its
// namespace and name, and its UID when it exists, as a pre-bound volume
// carries them; the binder then binds that claim and no other.
func preBind(in ReleaseInput, refuse func(Refusal, string, ...any) ReleaseDecision, why string) ReleaseDecision {
	to, target := in.To, in.Target
	ref := &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: to.Namespace, Name: to.Name}
	switch {
	case target == nil:
		return ReleaseDecision{ClaimRef: ref, Reason: fmt.Sprintf("%s; pre-bound to claim %s, which does not exist yet: the claim of that name binds it, no other",
			why, to)}
	case target.DeletionTimestamp != nil:
		return refuse(RefuseTargetDeleting, "claim %s is being deleted", to)
	case target.Spec.VolumeName != "" && target.Spec.VolumeName != in.Name:
		return refuse(RefuseTargetBound, "claim %s is bound to volume %s", to, target.Spec.VolumeName)
	}
	ref.UID = target.UID
	return ReleaseDecision{ClaimRef: ref, Reason: fmt.Sprintf("%s; pre-bound to claim %s (uid %s): it binds it, no other", why, to, target.UID)}
}

// ParseClaimKey reads NAMESPACE/NAME, as --to takes it.
func ParseClaimKey(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("claim %q: want NAMESPACE/NAME", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

func phaseOf(pv *v1.PersistentVolume) v1.PersistentVolumePhase {
	if pv.Status.Phase == "" {
		return v1.VolumePending
	}
	return pv.Status.Phase
}

// Apply is a copy of pv with the decided claimRef: what release writes.
func (d ReleaseDecision) Apply(pv *v1.PersistentVolume) *v1.PersistentVolume {
	out := pv.DeepCopy()
	out.Spec.ClaimRef = d.ClaimRef.DeepCopy()
	return out
}
