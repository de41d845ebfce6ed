package doctor

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/binding"
)

func attachmentObject(va *storagev1.VolumeAttachment) Object {
	return Object{Kind: ObjectAttachment, Name: va.Name, Node: va.Spec.NodeName}
}

// staleAttachments: VolumeAttachments found stale (staleAttachment).
func staleAttachments(s *Snapshot, grace time.Duration) []Finding {
	var out []Finding
	for _, va := range s.Attachments {
		if va.DeletionTimestamp != nil {
			continue
		}
		if kind, problem := staleAttachment(s, va, grace); kind != "" {
			out = append(out, Finding{Kind: kind, Severity: SeverityProblem, Object: attachmentObject(va),
				Problem: problem, Fixes: []Fix{deleteAttachment(va, kind == KindAttachmentNodeGone)}})
		}
	}
	return out
}

// staleAttachment says whether an attachment of a PV, older than grace,
// is to a node that is gone, or of a volume no pod on its node uses and
// the node no longer reports in use ("" when neither). It follows the
// attach/detach loop's own rule: a volume its node reports in use is still
// mounted, and detaching it under the mount loses what was not yet
// written; and a node may not have reported a new mount yet.
func staleAttachment(s *Snapshot, va *storagev1.VolumeAttachment, grace time.Duration) (Kind, string) {
	src := va.Spec.Source.PersistentVolumeName
	age := s.Now.Sub(va.CreationTimestamp.Time)
	if src == nil || age < grace {
		return "", ""
	}
	n := s.FindNode(va.Spec.NodeName)
	switch {
	case n == nil:
		return KindAttachmentNodeGone, fmt.Sprintf("Attaches PV %s to node %s, which no longer exists (attached %s ago).",
			*src, va.Spec.NodeName, Age(age))
	case !usedOnNode(s, *src, n.Name) && !reportedInUse(s, va, n):
		return KindAttachmentUnused, fmt.Sprintf("Attaches PV %s to node %s, yet no pod there uses it and the node reports it unmounted (%s).",
			*src, n.Name, whoseVolume(s, *src))
	}
	return "", ""
}

// deleteAttachment is the fix that detaches an attachment doctor found
// stale. It cannot carry a precondition on what makes it safe (a pod of
// the node mounting the volume again), so its risk says so.
func deleteAttachment(va *storagev1.VolumeAttachment, nodeGone bool) Fix {
	f := Fix{Says: fmt.Sprintf("delete it: the attacher then detaches the volume from %s", va.Spec.NodeName),
		Risk: fmt.Sprintf("should a pod on %s use the volume again by the time you run this, its mount loses the volume: writes not yet flushed are lost; run doctor again right before",
			va.Spec.NodeName),
		Command: "kubectl delete volumeattachment " + va.Name}
	if nodeGone {
		f.Risk = fmt.Sprintf("the Node object is gone, not necessarily the machine: if %s still runs with the volume still mounted, this detaches it under the mount, and writes not yet flushed are lost; make sure the machine is off or has unmounted it",
			va.Spec.NodeName)
	}
	return f
}

// reportedInUse says whether the node reports the attachment's volume in
// use (mounted), by its unique volume name: the PV's, or, once the PV is
// gone, any in-use volume of the attacher's driver whose handle gives the
// attachment's name.
func reportedInUse(s *Snapshot, va *storagev1.VolumeAttachment, n *v1.Node) bool {
	if u, ok := attachment.VolumeOf(s.FindVolume(*va.Spec.Source.PersistentVolumeName)); ok {
		return slices.Contains(n.Status.VolumesInUse, u)
	}
	return slices.ContainsFunc(n.Status.VolumesInUse, func(u v1.UniqueVolumeName) bool {
		driver, handle, ok := attachment.SplitUnique(u)
		return ok && driver == va.Spec.Attacher && attachment.Name(handle, driver, n.Name) == va.Name
	})
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
