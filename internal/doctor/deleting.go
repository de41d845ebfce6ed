package doctor

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/protection"
	"github.com/volplane/volplane/internal/provisioning"
)

// holder is what one finalizer waits for, and how to end the wait.
type holder struct {
	says  string
	fixes []Fix
}

// stuckDeleting: claims, volumes and VolumeAttachments being deleted for
// longer than threshold, with what holds each finalizer.
func stuckDeleting(s *Snapshot, t Thresholds) []Finding {
	var out []Finding
	stuck := func(m *metav1.ObjectMeta) bool {
		return m.DeletionTimestamp != nil && len(m.Finalizers) > 0 && s.Now.Sub(m.DeletionTimestamp.Time) >= t.DeletingFor
	}
	for _, c := range s.Claims {
		if stuck(&c.ObjectMeta) {
			out = append(out, deletingFinding(s, claimObject(c), &c.ObjectMeta, func(f string) holder { return claimHolder(s, c, f) }))
		}
	}
	for _, pv := range s.Volumes {
		if stuck(&pv.ObjectMeta) {
			out = append(out, deletingFinding(s, volumeObject(pv.Name), &pv.ObjectMeta, func(f string) holder { return volumeHolder(s, pv, f, t.AttachmentGrace) }))
		}
	}
	for _, va := range s.Attachments {
		if stuck(&va.ObjectMeta) {
			out = append(out, deletingFinding(s, attachmentObject(va), &va.ObjectMeta, func(f string) holder { return attachmentHolder(va, f) }))
		}
	}
	return out
}

func deletingFinding(s *Snapshot, o Object, m *metav1.ObjectMeta, holderOf func(string) holder) Finding {
	f := Finding{Kind: KindStuckDeleting, Severity: SeverityProblem, Object: o}
	var says []string
	for _, fin := range m.Finalizers {
		h := holderOf(fin)
		says = append(says, fmt.Sprintf("%s: %s", fin, h.says))
		for _, fix := range h.fixes {
			if !slices.ContainsFunc(f.Fixes, func(g Fix) bool { return g.Command == fix.Command }) {
				f.Fixes = append(f.Fixes, fix) // two finalizers may wait for the same thing
			}
		}
	}
	f.Problem = fmt.Sprintf("Being deleted for %s, held by %s.", Age(s.Now.Sub(m.DeletionTimestamp.Time)), strings.Join(says, "; "))
	return f
}

func claimHolder(s *Snapshot, c *v1.PersistentVolumeClaim, fin string) holder {
	if h, ok := snapshotClaimHolder(s, c, fin); ok {
		return h
	}
	switch fin {
	case protection.ClaimFinalizer:
		var pods []string
		var fixes []Fix
		for _, pod := range s.Pods {
			if _, uses := protection.PodUses(pod, c); uses {
				pods = append(pods, pod.Name)
				fixes = append(fixes, Fix{Says: "delete pod " + pod.Name + ", which uses the claim",
					Risk:    "its containers stop; what they keep outside volumes is lost",
					Command: fmt.Sprintf("kubectl delete pod -n %s %s", pod.Namespace, pod.Name)})
			}
		}
		if len(pods) > 0 {
			return holder{says: "pods using it: " + strings.Join(pods, ", "), fixes: fixes}
		}
		return holder{says: "no pod uses it, so the pvc-protection loop should remove it (is a controller running it?)",
			fixes: []Fix{removeFinalizer("pvc", c.Namespace, &c.ObjectMeta, fin, "safe: no pod uses the claim")}}
	case provisioning.ClaimFinalizer:
		return holder{says: "the provisioner must first delete the volume it may have created for the claim (is it running?)",
			fixes: []Fix{explainClaim(c), removeFinalizer("pvc", c.Namespace, &c.ObjectMeta, fin,
				"may leave a backend volume behind, which doctor then reports as orphaned")}}
	}
	return otherHolder("pvc", c.Namespace, &c.ObjectMeta, fin)
}

func volumeHolder(s *Snapshot, pv *v1.PersistentVolume, fin string, grace time.Duration) holder {
	switch {
	case fin == protection.VolumeFinalizer:
		if c := boundClaim(s, pv); c != nil {
			return holder{says: fmt.Sprintf("claim %s/%s is bound to it", c.Namespace, c.Name),
				fixes: []Fix{{Says: fmt.Sprintf("delete claim %s/%s, which is bound to it; the volume's reclaim policy %s then applies",
					c.Namespace, c.Name, pv.Spec.PersistentVolumeReclaimPolicy),
					Risk:    reclaimRisk(pv),
					Command: fmt.Sprintf("kubectl delete pvc -n %s %s", c.Namespace, c.Name)}}}
		}
		return holder{says: "no claim is bound to it, so the pv-protection loop should remove it (is a controller running it?)",
			fixes: []Fix{removeFinalizer("pv", "", &pv.ObjectMeta, fin, "safe: no claim is bound to it")}}
	case fin == binding.ExternalFinalizer:
		return holder{says: "the provisioner must first delete its backend volume (is it running? does the driver fail?)",
			fixes: []Fix{{Says: "see the deleter's last error", Command: "volplane explain pv " + pv.Name},
				removeFinalizer("pv", "", &pv.ObjectMeta, fin, "leaves the backend volume behind, which doctor then reports as orphaned")}}
	case strings.HasPrefix(fin, attachment.FinalizerPrefix):
		return attacherHolder(s, pv, fin, grace)
	}
	return otherHolder("pv", "", &pv.ObjectMeta, fin)
}

// attacherHolder: the attacher keeps its finalizer on a volume while
// attachments of it exist; only those found stale are advised deleted.
func attacherHolder(s *Snapshot, pv *v1.PersistentVolume, fin string, grace time.Duration) holder {
	var fixes []Fix
	var names []string
	for _, va := range s.Attachments {
		src := va.Spec.Source.PersistentVolumeName
		if src == nil || *src != pv.Name {
			continue
		}
		kind, _ := staleAttachment(s, va, grace)
		switch {
		case va.DeletionTimestamp != nil:
			names = append(names, va.Name+" (being detached)")
		case kind == "":
			names = append(names, fmt.Sprintf("%s (node %s may still use it)", va.Name, va.Spec.NodeName))
		default:
			names = append(names, va.Name)
			fixes = append(fixes, deleteAttachment(va, kind == KindAttachmentNodeGone))
		}
	}
	if len(names) > 0 {
		return holder{says: "the attacher keeps it while VolumeAttachments use it: " + strings.Join(names, ", "), fixes: fixes}
	}
	return holder{says: "no VolumeAttachment uses it, so the attacher should remove it (is it running?)",
		fixes: []Fix{removeFinalizer("pv", "", &pv.ObjectMeta, fin, "safe: no VolumeAttachment uses it")}}
}

// reclaimRisk is what deleting a volume's claim does to its data.
func reclaimRisk(pv *v1.PersistentVolume) string {
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case v1.PersistentVolumeReclaimDelete:
		return "reclaim policy Delete: the volume and its data are deleted"
	case v1.PersistentVolumeReclaimRecycle:
		return "reclaim policy Recycle: the volume's data is scrubbed"
	}
	return ""
}

func attachmentHolder(va *storagev1.VolumeAttachment, fin string) holder {
	if strings.HasPrefix(fin, attachment.FinalizerPrefix) {
		return holder{says: fmt.Sprintf("the attacher of %s must first detach the volume from %s (is it running? does the driver fail?)",
			va.Spec.Attacher, va.Spec.NodeName),
			fixes: []Fix{removeFinalizer("volumeattachment", "", &va.ObjectMeta, fin,
				fmt.Sprintf("the volume may stay attached to %s on the backend", va.Spec.NodeName))}}
	}
	return otherHolder("volumeattachment", "", &va.ObjectMeta, fin)
}

func otherHolder(resource, namespace string, m *metav1.ObjectMeta, fin string) holder {
	return holder{says: "added by another controller, which should remove it",
		fixes: []Fix{removeFinalizer(resource, namespace, m, fin, "only once you know why it is there")}}
}

// boundClaim is the claim the volume is bound to, if it exists.
func boundClaim(s *Snapshot, pv *v1.PersistentVolume) *v1.PersistentVolumeClaim {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return nil
	}
	c := s.FindClaim(ref.Namespace, ref.Name)
	if c == nil || (ref.UID != "" && c.UID != ref.UID) {
		return nil
	}
	return c
}

// removeFinalizer is the JSON patch that removes fin from the object as
// read, by its index, and nothing else: it tests the object's
// resourceVersion and the finalizer at that index first, so pasted once
// anything changed (another finalizer added or removed, the object written
// again) it fails instead of removing what it did not look at.
func removeFinalizer(resource, namespace string, m *metav1.ObjectMeta, fin, caveat string) Fix {
	i := slices.Index(m.Finalizers, fin)
	at := fmt.Sprintf("/metadata/finalizers/%d", i)
	var ops []string
	if m.ResourceVersion != "" {
		ops = append(ops, patchOp("test", "/metadata/resourceVersion", m.ResourceVersion))
	}
	ops = append(ops, patchOp("test", at, fin), patchOp("remove", at, ""))
	ns := ""
	if namespace != "" {
		ns = "-n " + namespace + " "
	}
	return Fix{Says: "remove the finalizer " + fin + " yourself (" + caveat + ")",
		Command: fmt.Sprintf("kubectl patch %s %s%s --type=json -p %s", resource, ns, m.Name, shellQuote("["+strings.Join(ops, ", ")+"]"))}
}

// patchOp is one JSON patch operation, spaced so that a long patch wraps
// between its words.
func patchOp(op, path, value string) string {
	p, _ := json.Marshal(path)
	if op == "remove" {
		return fmt.Sprintf(`{"op": %q, "path": %s}`, op, p)
	}
	v, _ := json.Marshal(value)
	return fmt.Sprintf(`{"op": %q, "path": %s, "value": %s}`, op, p, v)
}

// shellQuote makes s one shell word, whatever it holds.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
