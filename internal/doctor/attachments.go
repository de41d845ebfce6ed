package doctor

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/binding"
)

func attachmentObject(va *storagev1.VolumeAttachment) Object {
	return Object{Kind: ObjectAttachment, Name: va.Name, Node: va.Spec.NodeName}
}

func deleteAttachment(va *storagev1.VolumeAttachment) Fix {
	return Fix{Says: fmt.Sprintf("delete it: the attacher then detaches the volume from %s", va.Spec.NodeName),
		Command: "kubectl delete volumeattachment " + va.Name}
}

// staleAttachments: VolumeAttachments (not being deleted) to a node that
// is gone, or of a volume no pod on their node uses any more.
func staleAttachments(s *Snapshot) []Finding {
	var out []Finding
	for _, va := range s.Attachments {
		src := va.Spec.Source.PersistentVolumeName
		if va.DeletionTimestamp != nil || src == nil {
			continue
		}
		switch {
		case !slices.ContainsFunc(s.Nodes, func(n *v1.Node) bool { return n.Name == va.Spec.NodeName }):
			out = append(out, Finding{Kind: KindAttachmentNodeGone, Object: attachmentObject(va),
				Problem: fmt.Sprintf("Attaches PV %s to node %s, which no longer exists.", *src, va.Spec.NodeName),
				Fixes:   []Fix{deleteAttachment(va)}})
		case !usedOnNode(s, *src, va.Spec.NodeName):
			out = append(out, Finding{Kind: KindAttachmentUnused, Object: attachmentObject(va),
				Problem: fmt.Sprintf("Attaches PV %s to node %s, yet no pod there uses it (%s).", *src, va.Spec.NodeName, whoseVolume(s, *src)),
				Fixes:   []Fix{deleteAttachment(va)}})
		}
	}
	return out
}

// usedOnNode says whether a pod on node, not terminated, uses the claim
// the volume is bound to.
func usedOnNode(s *Snapshot, pvName, node string) bool {
	pv := s.FindVolume(pvName)
	if pv == nil || pv.Spec.ClaimRef == nil {
		return false
	}
	return slices.ContainsFunc(s.PodsNaming(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name), func(pod *v1.Pod) bool {
		return pod.Spec.NodeName == node && !binding.PodTerminated(pod)
	})
}

// whoseVolume says whose the volume is, for the problem sentence.
func whoseVolume(s *Snapshot, pvName string) string {
	pv := s.FindVolume(pvName)
	switch {
	case pv == nil:
		return "the PV is gone"
	case pv.Spec.ClaimRef == nil:
		return "the PV is bound to no claim"
	}
	return "its claim is " + binding.ClaimRefKey(pv.Spec.ClaimRef)
}
