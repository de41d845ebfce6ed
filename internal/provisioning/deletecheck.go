package provisioning

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// The checks made right before a backend volume is deleted, pure.

// WhyNotDelete says why the live PV must not be deleted although its
// informer copy was decided for deletion, "" if it must still be: the same
// object (UID; its volume source is immutable, so the same backend volume),
// still Released under Delete, still bound to the claim that went away,
// and, once the PV is being deleted, still holding our finalizer (without
// it the backend volume is not ours to delete any more).
func WhyNotDelete(cached, live *v1.PersistentVolume) string {
	switch {
	case live.UID != cached.UID:
		return fmt.Sprintf("the PV was replaced by another of the same name (UID %s, decided for %s)", live.UID, cached.UID)
	case live.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete:
		return fmt.Sprintf("the reclaim policy is now %s", live.Spec.PersistentVolumeReclaimPolicy)
	case live.Status.Phase != v1.VolumeReleased:
		return fmt.Sprintf("the PV is now %s", live.Status.Phase)
	case live.Spec.ClaimRef == nil || cached.Spec.ClaimRef == nil:
		return "the PV names no claim"
	case !sameClaim(live.Spec.ClaimRef, cached.Spec.ClaimRef):
		return fmt.Sprintf("the PV now names claim %s/%s (UID %s)", live.Spec.ClaimRef.Namespace, live.Spec.ClaimRef.Name, live.Spec.ClaimRef.UID)
	case live.DeletionTimestamp != nil && !slices.Contains(live.Finalizers, VolumeFinalizer):
		return "the PV is being deleted without our finalizer"
	}
	return ""
}

func sameClaim(a, b *v1.ObjectReference) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.UID == b.UID
}

// AttachmentBlocks refuses the deletion of a PV that a VolumeAttachment
// still references, for a driver that attaches volumes (publish); vas are
// the VolumeAttachments that may name it. The message is the
// external-provisioner's (controller.go: canDeleteVolume).
func AttachmentBlocks(pv string, publish bool, vas []*storagev1.VolumeAttachment) error {
	if !publish {
		return nil
	}
	for _, va := range vas {
		if name := va.Spec.Source.PersistentVolumeName; name != nil && *name == pv {
			return fmt.Errorf("persistentvolume %s is still attached to node %s", pv, va.Spec.NodeName)
		}
	}
	return nil
}

// hasNodeAffinity: the PV says which nodes can reach its volume.
func hasNodeAffinity(pv *v1.PersistentVolume) bool {
	a := pv.Spec.NodeAffinity
	return a != nil && a.Required != nil && len(a.Required.NodeSelectorTerms) > 0
}

// DescribeAffinity renders the PV's node affinity for messages, e.g.
// "topology.volplane.io/node in [node-2]"; terms are joined with "or".
func DescribeAffinity(pv *v1.PersistentVolume) string {
	if !hasNodeAffinity(pv) {
		return "every node (no node affinity)"
	}
	var terms []string
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		var exprs []string
		for _, e := range t.MatchExpressions {
			exprs = append(exprs, fmt.Sprintf("%s %s [%s]", e.Key, strings.ToLower(string(e.Operator)), strings.Join(e.Values, ",")))
		}
		terms = append(terms, strings.Join(exprs, " and "))
	}
	return strings.Join(terms, " or ")
}
