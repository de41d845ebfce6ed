package explain

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/protection"
)

// nodeUses is the volume's state on every node where a pod uses it or a
// VolumeAttachment names it, sorted by node.
func nodeUses(pv *v1.PersistentVolume, pods []*v1.Pod, f *Facts) []NodeUse {
	byNode := map[string]*NodeUse{}
	use := func(node string) *NodeUse {
		if byNode[node] == nil {
			byNode[node] = &NodeUse{Node: node, NodeExists: f.FindNode(node) != nil}
		}
		return byNode[node]
	}
	for _, pod := range pods {
		if pod.Spec.NodeName != "" && !binding.PodTerminated(pod) {
			u := use(pod.Spec.NodeName)
			u.Pods = append(u.Pods, podUse(pod, f))
		}
	}
	for _, va := range f.Attachments {
		if name := va.Spec.Source.PersistentVolumeName; name != nil && *name == pv.Name {
			attachmentState(use(va.Spec.NodeName), va)
		}
	}
	out := make([]NodeUse, 0, len(byNode))
	for _, node := range slices.Sorted(maps.Keys(byNode)) {
		u := byNode[node]
		slices.SortFunc(u.Pods, func(a, b PodUse) int { return strings.Compare(a.Name, b.Name) })
		fillNodeState(u, pv, f)
		out = append(out, *u)
	}
	return out
}

func attachmentState(u *NodeUse, va *storagev1.VolumeAttachment) {
	u.Attachment, u.Attached = va.Name, va.Status.Attached
	if e := va.Status.AttachError; e != nil {
		u.AttachError = e.Message
	}
	if e := va.Status.DetachError; e != nil {
		u.DetachError = e.Message
	}
}

// fillNodeState adds what the node reports and the sentence for people.
func fillNodeState(u *NodeUse, pv *v1.PersistentVolume, f *Facts) {
	if pv.Spec.CSI != nil {
		d := f.driver(pv.Spec.CSI.Driver)
		u.AttachRequired = d == nil || d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
		if n := f.FindNode(u.Node); n != nil {
			unique := attachment.UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)
			u.InUse = slices.Contains(n.Status.VolumesInUse, unique)
		}
	}
	u.Summary = nodeSummary(u)
}

func nodeSummary(u *NodeUse) string {
	var parts []string
	switch {
	case !u.NodeExists:
		parts = append(parts, "the node does not exist")
	case u.AttachError != "":
		parts = append(parts, "attach failed: "+u.AttachError)
	case u.DetachError != "":
		parts = append(parts, "detach failed: "+u.DetachError)
	case u.AttachRequired && u.Attachment == "":
		parts = append(parts, "not attached: no VolumeAttachment yet")
	case u.AttachRequired && !u.Attached:
		parts = append(parts, "attaching")
	case u.AttachRequired:
		parts = append(parts, "attached")
	}
	var mounted, waiting []string
	for _, p := range u.Pods {
		switch {
		case p.Mounted:
			mounted = append(mounted, p.Name)
		case p.MountError != "":
			waiting = append(waiting, p.Name+" ("+p.MountError+")")
		default:
			waiting = append(waiting, p.Name)
		}
	}
	if len(mounted) > 0 {
		parts = append(parts, "mounted for "+strings.Join(mounted, ", "))
	}
	if len(waiting) > 0 {
		parts = append(parts, "not mounted yet for "+strings.Join(waiting, ", "))
	}
	if len(u.Pods) == 0 {
		s := "no pod uses it here"
		if u.InUse {
			s += ", but the node still reports it in use (unmounting)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// podUse is the pod's side of a volume on its node: mounted once the pod
// runs (the kubelet starts containers only after mounting every volume),
// else the last mount or attach failure the pod's events report.
func podUse(pod *v1.Pod, f *Facts) PodUse {
	u := PodUse{Name: pod.Name, Phase: string(pod.Status.Phase), Mounted: pod.Status.Phase == v1.PodRunning}
	if u.Mounted {
		return u
	}
	var last *v1.Event
	for _, e := range eventsOn(f.Events, pod.UID) {
		if (e.Reason == "FailedMount" || e.Reason == "FailedAttachVolume") && (last == nil || eventTime(e).After(eventTime(last))) {
			last = e
		}
	}
	if last != nil {
		u.MountError = last.Message
	}
	return u
}

// expansionOf reports a resize that has not finished.
func expansionOf(claim *v1.PersistentVolumeClaim) *Change {
	want := claim.Spec.Resources.Requests[v1.ResourceStorage]
	have, ok := claim.Status.Capacity[v1.ResourceStorage]
	if !ok || claim.Status.Phase != v1.ClaimBound || want.Cmp(have) <= 0 {
		return nil
	}
	c := &Change{From: have.String(), To: want.String()}
	if s, ok := claim.Status.AllocatedResourceStatuses[v1.ResourceStorage]; ok {
		c.Status = string(s)
	}
	c.Summary = fmt.Sprintf("Expanding from %s to %s", c.From, c.To)
	if c.Status != "" {
		c.Summary += " (" + c.Status + ")"
	}
	if msg := conditionMessage(claim, v1.PersistentVolumeClaimControllerResizeError, v1.PersistentVolumeClaimNodeResizeError,
		v1.PersistentVolumeClaimFileSystemResizePending, v1.PersistentVolumeClaimResizing); msg != "" {
		c.Summary += ": " + msg
	}
	c.Summary = Sentence(c.Summary)
	return c
}

// modificationOf reports a volume attributes class change that has not
// finished.
func modificationOf(claim *v1.PersistentVolumeClaim) *Change {
	want := ""
	if claim.Spec.VolumeAttributesClassName != nil {
		want = *claim.Spec.VolumeAttributesClassName
	}
	have := ""
	if claim.Status.CurrentVolumeAttributesClassName != nil {
		have = *claim.Status.CurrentVolumeAttributesClassName
	}
	if want == have || claim.Status.Phase != v1.ClaimBound {
		return nil
	}
	c := &Change{From: orNone(have), To: orNone(want)}
	if s := claim.Status.ModifyVolumeStatus; s != nil {
		c.Status = string(s.Status)
	}
	c.Summary = fmt.Sprintf("Changing the volume attributes class from %s to %s", c.From, c.To)
	if c.Status != "" {
		c.Summary += " (" + c.Status + ")"
	}
	if msg := conditionMessage(claim, v1.PersistentVolumeClaimVolumeModifyVolumeError, v1.PersistentVolumeClaimVolumeModifyingVolume); msg != "" {
		c.Summary += ": " + msg
	}
	c.Summary = Sentence(c.Summary)
	return c
}

func conditionMessage(claim *v1.PersistentVolumeClaim, types ...v1.PersistentVolumeClaimConditionType) string {
	for _, t := range types {
		for _, c := range claim.Status.Conditions {
			if c.Type == t && c.Status == v1.ConditionTrue && c.Message != "" {
				return c.Message
			}
		}
	}
	return ""
}

// claimDeletion says what holds a claim being deleted: the pods that keep
// pvc-protection (protection.PodUses, as that controller decides).
func claimDeletion(claim *v1.PersistentVolumeClaim, f *Facts) *Deletion {
	if claim.DeletionTimestamp == nil {
		return nil
	}
	d := &Deletion{Since: claim.DeletionTimestamp.UTC().Format(time.RFC3339), Finalizers: claim.Finalizers}
	for _, pod := range f.Pods {
		if _, ok := protection.PodUses(pod, claim); ok {
			d.HeldBy = append(d.HeldBy, "pod/"+pod.Name)
		}
	}
	slices.Sort(d.HeldBy)
	switch {
	case len(claim.Finalizers) == 0:
		d.Summary = "Being deleted; no finalizer holds it, the API server removes it."
	case slices.Contains(claim.Finalizers, protection.ClaimFinalizer) && len(d.HeldBy) > 0:
		verb := "stop"
		if len(d.HeldBy) == 1 {
			verb = "stops"
		}
		d.Summary = fmt.Sprintf("Being deleted; %s keeps it until %s %s using it.", protection.ClaimFinalizer, list(d.HeldBy), verb)
	case slices.Contains(claim.Finalizers, protection.ClaimFinalizer):
		d.Summary = "Being deleted; no pod uses it, so the pvc-protection controller removes " +
			protection.ClaimFinalizer + " at its next sync (is it running?)."
	default:
		d.Summary = fmt.Sprintf("Being deleted; waiting for the finalizers %s.", strings.Join(claim.Finalizers, ", "))
	}
	return d
}

func eventsOn(events []*v1.Event, uid types.UID) []*v1.Event {
	var out []*v1.Event
	for _, e := range events {
		if e.InvolvedObject.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

func count(e *v1.Event) int {
	if e.Count > 0 {
		return int(e.Count)
	}
	if e.Series != nil && e.Series.Count > 0 {
		return int(e.Series.Count)
	}
	return 1
}

func eventTime(e *v1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// list joins names for a sentence: "a", "a and b", "a, b and c".
func list(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
