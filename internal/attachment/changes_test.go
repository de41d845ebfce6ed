package attachment

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// changeWorld is node-1 with one of each situation a decision knows: a
// volume attached and reported, one attaching, one whose attach failed, a
// claim not bound, a single-node volume attached elsewhere, an attachment
// no pod wants, a generic ephemeral volume, and a terminated pod.
type changeWorld struct {
	w    *world
	node *v1.Node
}

func newChangeWorld() *changeWorld {
	w := newWorld()
	for _, name := range []string{"data", "logs", "fail", "elsewhere", "unwanted"} {
		w.volume(name)
	}
	w.f.Claims["ns/pending"] = &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pending", UID: "uid-pending"},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}}
	w.pod("a", node, "data", "pending")
	w.pod("b", node, "logs", "fail")
	w.pod("c", node, "elsewhere")
	w.pod("other", "node-2", "elsewhere")
	done := w.pod("done", node, "unwanted")
	done.Status.Phase = v1.PodSucceeded
	eph := w.pod("e", node)
	eph.Spec.Volumes = append(eph.Spec.Volumes, v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}})
	w.volume("e-scratch")
	w.f.Claims["ns/e-scratch"].OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "e", UID: eph.UID, Controller: ptr.To(true)}}
	w.attachment("data", node, true)
	w.attachment("logs", node, false)
	fail := w.attachment("fail", node, false)
	fail.Status.AttachError = &storagev1.VolumeError{Message: "boom", Time: metav1.Time{Time: t0}}
	w.attachment("elsewhere", "node-2", true)
	w.attachment("unwanted", node, true)
	// Unwanted long enough that only the node's being Ready keeps it.
	w.f.UndesiredSince = map[string]time.Time{Name("h-unwanted", drv, node): t0.Add(-time.Hour)}
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Annotations: map[string]string{ManagedAnnotation: "true"}, Labels: map[string]string{"zone": "a"}},
		Status: v1.NodeStatus{
			Conditions:      []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Time{Time: t0}}},
			VolumesInUse:    []v1.UniqueVolumeName{unique("data"), unique("unwanted")},
			VolumesAttached: []v1.AttachedVolume{{Name: unique("data")}, {Name: unique("unwanted")}},
		}}
	w.f.Node = NodeOf(node, n, nil)
	return &changeWorld{w: w, node: n}
}

// view is a plan with objects named, so two plans made from copies of the
// same objects compare equal when they decide the same.
func view(p Plan) string {
	var b strings.Builder
	name := func(o metav1.Object) string {
		if o == nil {
			return ""
		}
		return o.GetNamespace() + "/" + o.GetName()
	}
	for _, c := range p.Create {
		spec := c.Attachment.Spec
		fmt.Fprintf(&b, "create %s %s %v %s %s %s %v\n", c.Attachment.Name, c.Volume, c.SingleNode, spec.Attacher, spec.NodeName,
			ptr.Deref(spec.Source.PersistentVolumeName, ""), spec.Source.InlineVolumeSpec != nil)
	}
	for _, d := range p.Detach {
		va := ""
		if d.Attachment != nil {
			va = d.Attachment.Name
		}
		fmt.Fprintf(&b, "detach %s %s %s\n", va, d.Volume, d.Reason)
	}
	for _, w := range p.Wait {
		var pod metav1.Object
		if w.Pod != nil {
			pod = w.Pod
		}
		fmt.Fprintf(&b, "wait %s %s %s %s\n", w.Volume, name(pod), w.Reason, w.Detail)
	}
	for _, e := range p.Events {
		fmt.Fprintf(&b, "event %s %s %s %q %s\n", name(e.Pod), e.Type, e.Reason, e.Message, e.Key)
	}
	fmt.Fprintf(&b, "attached %v changed %v since %v requeue %v counts %v\n", p.VolumesAttached, p.StatusChanged, p.UndesiredSince, p.RequeueAfter, p.Counts)
	return b.String()
}

type change[T any] struct {
	name string
	// matters is what the test expects the Changed function to say.
	matters bool
	mutate  func(T)
}

// checkChanges applies each change to a copy of the world's object (got by
// get, put back by put) and holds: the Changed function says what the
// change is expected to be, and a change it calls irrelevant leaves the
// plan as it was. A change expected to matter must change the plan too,
// or the case tests nothing.
func checkChanges[T any](t *testing.T, kind string, get func(*changeWorld) T, copyOf func(T) T, put func(*changeWorld, T),
	changed func(old, cur T) bool, changes []change[T]) {
	t.Helper()
	before := view(Decide(newChangeWorld().f()))
	for _, c := range changes {
		cw := newChangeWorld()
		old := get(cw)
		cur := copyOf(old)
		c.mutate(cur)
		put(cw, cur)
		after := view(Decide(cw.f()))
		if got := changed(old, cur); got != c.matters {
			t.Errorf("%s %s: changed = %v, want %v", kind, c.name, got, c.matters)
		}
		if !c.matters && after != before {
			t.Errorf("%s %s: called irrelevant, but the plan changed:\n%s\nto\n%s", kind, c.name, before, after)
		}
		if c.matters && after == before {
			t.Errorf("%s %s: a change that matters left the plan as it was: the case tests nothing", kind, c.name)
		}
	}
}

func (cw *changeWorld) f() Facts {
	cw.w.f.Node = NodeOf(node, cw.node, nil)
	return cw.w.f
}

func TestChangesThatCannotAlterADecisionAreToldApart(t *testing.T) {
	podAt := func(i int) func(*changeWorld) *v1.Pod { return func(cw *changeWorld) *v1.Pod { return cw.w.f.Pods[i] } }
	putPod := func(i int) func(*changeWorld, *v1.Pod) {
		return func(cw *changeWorld, p *v1.Pod) { cw.w.f.Pods[i] = p }
	}
	running := func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }
	for i, changes := range map[int][]change[*v1.Pod]{
		0: { // pod a
			{"phase Running", false, running},
			{"conditions", false, func(p *v1.Pod) {
				p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
			}},
			{"labels and annotations", false, func(p *v1.Pod) { p.Labels, p.Annotations = map[string]string{"x": "y"}, map[string]string{"x": "y"} }},
			{"a container running, deletion asked", false, func(p *v1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: t0}
				p.Status.ContainerStatuses = []v1.ContainerStatus{{State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
			}},
			{"failed", true, func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }},
			{"deleted, nothing running", true, func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }},
			{"moved to another node", true, func(p *v1.Pod) { p.Spec.NodeName = "node-3" }},
			{"a volume less", true, func(p *v1.Pod) { p.Spec.Volumes = p.Spec.Volumes[1:] }},
		},
		3: { // pod done, terminated
			{"status message", false, func(p *v1.Pod) { p.Status.Message = "completed" }},
			{"running again", true, running},
		},
	} {
		checkChanges(t, "pod", podAt(i), (*v1.Pod).DeepCopy, putPod(i), PodChanged, changes)
	}

	claim := func(key string) func(*changeWorld) *v1.PersistentVolumeClaim {
		return func(cw *changeWorld) *v1.PersistentVolumeClaim { return cw.w.f.Claims[key] }
	}
	putClaim := func(key string) func(*changeWorld, *v1.PersistentVolumeClaim) {
		return func(cw *changeWorld, c *v1.PersistentVolumeClaim) { cw.w.f.Claims[key] = c }
	}
	checkChanges(t, "claim", claim("ns/data"), (*v1.PersistentVolumeClaim).DeepCopy, putClaim("ns/data"), ClaimChanged, []change[*v1.PersistentVolumeClaim]{
		{"annotations, finalizers", false, func(c *v1.PersistentVolumeClaim) {
			c.Annotations, c.Finalizers = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}, []string{"kubernetes.io/pvc-protection"}
		}},
		{"capacity and conditions", false, func(c *v1.PersistentVolumeClaim) {
			c.Status.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("2Gi")}
			c.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimResizing, Status: v1.ConditionTrue}}
		}},
		{"request raised", false, func(c *v1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: resource.MustParse("2Gi")}
		}},
		{"lost", true, func(c *v1.PersistentVolumeClaim) { c.Status.Phase = v1.ClaimLost }},
		{"another volume", true, func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-logs" }},
	})
	checkChanges(t, "claim", claim("ns/e-scratch"), (*v1.PersistentVolumeClaim).DeepCopy, putClaim("ns/e-scratch"), ClaimChanged, []change[*v1.PersistentVolumeClaim]{
		{"labels", false, func(c *v1.PersistentVolumeClaim) { c.Labels = map[string]string{"x": "y"} }},
		{"owner gone", true, func(c *v1.PersistentVolumeClaim) { c.OwnerReferences = nil }},
	})
	checkChanges(t, "claim", claim("ns/pending"), (*v1.PersistentVolumeClaim).DeepCopy, putClaim("ns/pending"), ClaimChanged, []change[*v1.PersistentVolumeClaim]{
		{"selected node annotation", false, func(c *v1.PersistentVolumeClaim) {
			c.Annotations = map[string]string{"volume.kubernetes.io/selected-node": node}
		}},
		{"bound", true, func(c *v1.PersistentVolumeClaim) { c.Status.Phase, c.Spec.VolumeName = v1.ClaimBound, "pv-unwanted" }},
	})

	volume := func(name string) func(*changeWorld) *v1.PersistentVolume {
		return func(cw *changeWorld) *v1.PersistentVolume { return cw.w.f.Volumes[name] }
	}
	putVolume := func(name string) func(*changeWorld, *v1.PersistentVolume) {
		return func(cw *changeWorld, pv *v1.PersistentVolume) { cw.w.f.Volumes[name] = pv }
	}
	for _, name := range []string{"pv-data", "pv-elsewhere"} {
		checkChanges(t, "volume "+name, volume(name), (*v1.PersistentVolume).DeepCopy, putVolume(name), VolumeChanged, []change[*v1.PersistentVolume]{
			{"the attacher's finalizer", false, func(pv *v1.PersistentVolume) { pv.Finalizers = append(pv.Finalizers, Finalizer(drv)) }},
			{"phase and resourceVersion", false, func(pv *v1.PersistentVolume) {
				pv.Status.Phase, pv.ResourceVersion = v1.VolumeReleased, "42"
			}},
			{"managed fields", false, func(pv *v1.PersistentVolume) { pv.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}} }},
			{"bound to another claim", true, func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef.UID = "someone-else" }},
		})
	}
	checkChanges(t, "volume pv-elsewhere", volume("pv-elsewhere"), (*v1.PersistentVolume).DeepCopy, putVolume("pv-elsewhere"), VolumeChanged, []change[*v1.PersistentVolume]{
		{"many nodes", true, func(pv *v1.PersistentVolume) { pv.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany} }},
	})

	attachmentNamed := func(va string) int {
		for i, a := range newChangeWorld().w.f.Attachments {
			if a.Name == va {
				return i
			}
		}
		panic(va)
	}
	for _, c := range []struct {
		volume, on string
		changes    []change[*storagev1.VolumeAttachment]
	}{
		{"logs", node, []change[*storagev1.VolumeAttachment]{
			{"the attacher's finalizer", false, func(va *storagev1.VolumeAttachment) { va.Finalizers = []string{Finalizer(drv)} }},
			{"annotations and metadata", false, func(va *storagev1.VolumeAttachment) {
				va.Annotations = map[string]string{"csi.alpha.kubernetes.io/node-id": "n1"}
				va.Status.AttachmentMetadata = map[string]string{"devicePath": "/dev/x"}
			}},
			{"a detach error", false, func(va *storagev1.VolumeAttachment) { va.Status.DetachError = &storagev1.VolumeError{Message: "x"} }},
			{"attached", true, func(va *storagev1.VolumeAttachment) { va.Status.Attached = true }},
			{"an attach error", true, func(va *storagev1.VolumeAttachment) { va.Status.AttachError = &storagev1.VolumeError{Message: "x"} }},
			{"being deleted", true, func(va *storagev1.VolumeAttachment) { va.DeletionTimestamp = &metav1.Time{Time: t0} }},
		}},
		{"fail", node, []change[*storagev1.VolumeAttachment]{
			{"retried by the attacher", true, func(va *storagev1.VolumeAttachment) {
				va.Status.AttachError.Time = metav1.Time{Time: t0.Add(time.Second)}
			}},
		}},
		{"elsewhere", "node-2", []change[*storagev1.VolumeAttachment]{
			{"the attacher's finalizer", false, func(va *storagev1.VolumeAttachment) { va.Finalizers = []string{Finalizer(drv)} }},
			{"gone to node-3", true, func(va *storagev1.VolumeAttachment) { va.Spec.NodeName = "node-3" }},
		}},
	} {
		i := attachmentNamed(Name("h-"+c.volume, drv, c.on))
		checkChanges(t, "attachment of "+c.volume, func(cw *changeWorld) *storagev1.VolumeAttachment { return cw.w.f.Attachments[i] },
			(*storagev1.VolumeAttachment).DeepCopy, func(cw *changeWorld, va *storagev1.VolumeAttachment) { cw.w.f.Attachments[i] = va },
			AttachmentChanged, c.changes)
	}

	checkChanges(t, "node", func(cw *changeWorld) *v1.Node { return cw.node }, (*v1.Node).DeepCopy,
		func(cw *changeWorld, n *v1.Node) { cw.node = n }, NodeChanged, []change[*v1.Node]{
			{"heartbeat", false, func(n *v1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Time{Time: t0.Add(time.Minute)} }},
			{"labels, another taint, allocatable", false, func(n *v1.Node) {
				n.Labels["zone"] = "b"
				n.Spec.Taints = []v1.Taint{{Key: "dedicated", Effect: v1.TaintEffectNoSchedule}}
				n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}
			}},
			{"not Ready", true, func(n *v1.Node) { n.Status.Conditions[0].Status = v1.ConditionFalse }},
			{"out of service", true, func(n *v1.Node) {
				n.Spec.Taints = []v1.Taint{{Key: OutOfServiceTaint, Effect: v1.TaintEffectNoExecute}}
			}},
			{"no longer using a volume", true, func(n *v1.Node) { n.Status.VolumesInUse = n.Status.VolumesInUse[:1] }},
			{"reports another volume attached", true, func(n *v1.Node) {
				n.Status.VolumesAttached = append(n.Status.VolumesAttached, v1.AttachedVolume{Name: unique("logs")})
			}},
			{"not managed any more", true, func(n *v1.Node) { n.Annotations = nil }},
		})
}
