package attachdetach

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/stacktest"
)

// env is one test's world.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
	driver string
	nodes  []string // the simulated nodes of the control plane
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cp := stacktest.ControlPlane(t)
	ns := stacktest.Namespace(t)
	e := &env{t: t, ctx: context.Background(), client: cp.Client, ns: ns, driver: ns + ".csi.test", nodes: cp.Nodes}
	for _, n := range cp.Nodes {
		t.Cleanup(func() { e.setInUse(n) })
	}
	return e
}

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, bed.loop.EndedEarly)
}

func (e *env) must(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// volume is a claim bound by hand to a CSI PersistentVolume of the test's
// driver.
type volume struct{ claim, pv, handle string }

func (e *env) unique(v volume) corev1.UniqueVolumeName {
	return attachment.UniqueVolumeName(e.driver, v.handle)
}

func (e *env) vaName(v volume, node string) string { return attachment.Name(v.handle, e.driver, node) }

// boundClaim makes claim <name> and PV <ns>-<name>, bound to each other.
func (e *env) boundClaim(name string, modes ...corev1.PersistentVolumeAccessMode) volume {
	e.t.Helper()
	return e.boundClaimOf(name, "handle-"+name, modes...)
}

// boundClaimOf is boundClaim with a PV naming the backend volume handle.
func (e *env) boundClaimOf(name, handle string, modes ...corev1.PersistentVolumeAccessMode) volume {
	e.t.Helper()
	return e.boundClaimSource(name, corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
		Driver: e.driver, VolumeHandle: handle}}, modes...)
}

// boundClaimSource is boundClaim with a PV of the given source (its
// handle is the CSI source's, if any).
func (e *env) boundClaimSource(name string, src corev1.PersistentVolumeSource, modes ...corev1.PersistentVolumeAccessMode) volume {
	e.t.Helper()
	if modes == nil {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	v := volume{claim: name, pv: e.ns + "-" + name}
	if src.CSI != nil {
		v.handle = src.CSI.VolumeHandle
	}
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	claim, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: modes, VolumeName: v.pv, StorageClassName: ptr.To(""),
			Resources: corev1.VolumeResourceRequirements{Requests: size}},
	}, metav1.CreateOptions{})
	e.must(err, "create claim")
	pv, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: v.pv},
		Spec: corev1.PersistentVolumeSpec{AccessModes: modes, Capacity: size, StorageClassName: "",
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: e.ns, Name: name, UID: claim.UID},
			PersistentVolumeSource: src},
	}, metav1.CreateOptions{})
	e.must(err, "create PV")
	e.t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumes().Delete(context.Background(), v.pv, metav1.DeleteOptions{})
	})
	pv.Status.Phase = corev1.VolumeBound
	_, err = e.client.CoreV1().PersistentVolumes().UpdateStatus(e.ctx, pv, metav1.UpdateOptions{})
	e.must(err, "PV status")
	claim.Status.Phase = corev1.ClaimBound
	claim.Status.AccessModes, claim.Status.Capacity = modes, size
	_, err = e.client.CoreV1().PersistentVolumeClaims(e.ns).UpdateStatus(e.ctx, claim, metav1.UpdateOptions{})
	e.must(err, "claim status")
	return v
}

// pod makes a pod on node (set directly: no scheduler involved) using
// the claims.
func (e *env) pod(name, node string, claims ...string) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	for _, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	out, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	e.must(err, "create pod")
	return out
}

// forceDelete deletes a pod at once, as with --force --grace-period 0.
func (e *env) forceDelete(pod string) {
	e.t.Helper()
	err := e.client.CoreV1().Pods(e.ns).Delete(e.ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	e.must(err, "delete pod")
}

// node makes a node of the test's own, managed unless told otherwise,
// with the given Ready status.
func (e *env) node(suffix string, managed bool, ready corev1.ConditionStatus) string {
	e.t.Helper()
	name := e.ns + "-" + suffix
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if managed {
		n.Annotations = map[string]string{attachment.ManagedAnnotation: "true"}
	}
	_, err := e.client.CoreV1().Nodes().Create(e.ctx, n, metav1.CreateOptions{})
	e.must(err, "create node")
	e.t.Cleanup(func() { _ = e.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	// A patch: the node lifecycle controller may have written the new
	// node already (taints), which would make an update conflict.
	now := metav1.Now()
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: ready, Reason: "Test", LastHeartbeatTime: now, LastTransitionTime: now}}}})
	_, err = e.client.CoreV1().Nodes().Patch(e.ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	e.must(err, "node status")
	return name
}

// setInUse plays the kubelet: node.status.volumesInUse becomes vols.
func (e *env) setInUse(node string, vols ...corev1.UniqueVolumeName) {
	if vols == nil {
		vols = []corev1.UniqueVolumeName{}
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"volumesInUse": vols}})
	_, err := e.client.CoreV1().Nodes().Patch(e.ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Errorf("set volumesInUse of %s: %v", node, err)
	}
}

// attacherSays plays the attacher: it sets the attachment's status.
func (e *env) attacherSays(va string, status storagev1.VolumeAttachmentStatus) {
	e.t.Helper()
	patch, _ := json.Marshal(map[string]any{"status": status})
	_, err := e.client.StorageV1().VolumeAttachments().Patch(e.ctx, va, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	e.must(err, "attachment status")
}

func (e *env) attachment(name string) *storagev1.VolumeAttachment {
	va, err := e.client.StorageV1().VolumeAttachments().Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	e.must(err, "get attachment")
	return va
}

func (e *env) waitAttachment(name string) *storagev1.VolumeAttachment {
	e.t.Helper()
	var va *storagev1.VolumeAttachment
	e.eventually("attachment "+name+" made", func() string {
		if va = e.attachment(name); va == nil {
			return "not there"
		}
		return ""
	})
	return va
}

func (e *env) waitAttachmentGone(name string) {
	e.t.Helper()
	e.eventually("attachment "+name+" deleted", func() string {
		if e.attachment(name) != nil {
			return "still there"
		}
		return ""
	})
}

// attachmentsOf counts the attachments of a PV, on any node.
func (e *env) attachmentsOf(pv string) []string {
	list, err := e.client.StorageV1().VolumeAttachments().List(e.ctx, metav1.ListOptions{})
	e.must(err, "list attachments")
	var out []string
	for _, va := range list.Items {
		if p := va.Spec.Source.PersistentVolumeName; p != nil && *p == pv {
			out = append(out, va.Spec.NodeName)
		}
	}
	return out
}

func (e *env) volumesAttached(node string) []corev1.AttachedVolume {
	n, err := e.client.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
	e.must(err, "get node")
	return n.Status.VolumesAttached
}

func (e *env) waitReported(node string, want corev1.UniqueVolumeName, reported bool) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("%s reported %v on %s", want, reported, node), func() string {
		got := e.volumesAttached(node)
		if slices.Contains(got, corev1.AttachedVolume{Name: want}) != reported {
			return fmt.Sprintf("volumesAttached = %v", got)
		}
		return ""
	})
}

// waitEvent waits for an event on the pod with exactly that message.
func (e *env) waitEvent(pod, eventType, reason, message string) {
	e.t.Helper()
	e.eventually("event "+reason+" on "+pod, func() string {
		list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return err.Error()
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.Type == eventType && ev.Reason == reason && ev.Message == message &&
				ev.Source.Component == attachment.EventComponent {
				return ""
			}
			seen = append(seen, fmt.Sprintf("%s %s %q (%s)", ev.Type, ev.Reason, ev.Message, ev.Source.Component))
		}
		return "events: " + strings.Join(seen, "; ")
	})
}

// counter reads a counter of the loop's registry.
func counter(name, label, value string) float64 {
	families, _ := bed.registry.Gather()
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabel(m, label, value) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// settle is how long a state that must not change is watched: several
// resyncs of the loop, well under the unmount wait where that matters.
const settle = 2 * time.Second
