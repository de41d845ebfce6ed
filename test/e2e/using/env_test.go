package using

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// env is one test's world: a client and a namespace.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), client: stack.CP.Client, ns: stacktest.Namespace(t)}
	t.Cleanup(e.cleanUp)
	return e
}

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, stack.EndedEarly)
}

// claim creates a claim of class with access mode mode.
func (e *env) claim(name, class string, mode corev1.PersistentVolumeAccessMode) {
	e.t.Helper()
	c := support.Claim(e.ns, name, class, "1Gi", support.Modes(mode))
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// pod creates a pod on node using claim (no claim: no volume of ours).
func (e *env) pod(name, node, claim string) {
	e.t.Helper()
	if _, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, support.Pod(e.ns, name, node, claim), metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) getPod(name string) *corev1.Pod {
	e.t.Helper()
	p, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// waitRunning waits until the pod is Running and Ready.
func (e *env) waitRunning(name string) *corev1.Pod {
	e.t.Helper()
	var pod *corev1.Pod
	e.eventually("pod "+name+" Running and Ready", func() string {
		pod = e.getPod(name)
		if pod.Status.Phase == corev1.PodRunning && podutils.IsPodReady(pod) {
			return ""
		}
		return fmt.Sprintf("phase %s on %q; events %s", pod.Status.Phase, pod.Spec.NodeName, e.events(name))
	})
	return pod
}

// deletePod deletes the pod gracefully and waits until it is gone: the
// node agent finishes the deletion once the volumes are torn down.
func (e *env) deletePod(name string) {
	e.t.Helper()
	if err := e.client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	e.eventually("pod "+name+" gone", func() string {
		_, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("still there (%v)", err)
	})
}

// volume waits until the claim is Bound and returns its PV.
func (e *env) volume(claim string) *corev1.PersistentVolume {
	e.t.Helper()
	var pv *corev1.PersistentVolume
	e.eventually("claim "+claim+" Bound", func() string {
		c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, claim, metav1.GetOptions{})
		if err != nil || c.Status.Phase != corev1.ClaimBound {
			return fmt.Sprintf("claim %v (%v)", c.Status.Phase, err)
		}
		pv, err = e.client.CoreV1().PersistentVolumes().Get(e.ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return ""
	})
	return pv
}

// attachmentsOf lists the VolumeAttachments of a PV as "node attached=bool".
func (e *env) attachmentsOf(pv string) []string {
	e.t.Helper()
	vas, err := e.client.StorageV1().VolumeAttachments().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, va := range vas.Items {
		if p := va.Spec.Source.PersistentVolumeName; p != nil && *p == pv {
			out = append(out, fmt.Sprintf("%s attached=%t", va.Spec.NodeName, va.Status.Attached))
		}
	}
	slices.Sort(out)
	return out
}

// attachedOnlyTo says what is wrong unless pv's one VolumeAttachment is
// to node, attached, named as the reference names it, and node reports
// the volume attached.
func (e *env) attachedOnlyTo(pv *corev1.PersistentVolume, node string) func() string {
	return func() string {
		if got, want := e.attachmentsOf(pv.Name), []string{node + " attached=true"}; !slices.Equal(got, want) {
			return fmt.Sprintf("attachments %v, want %v", got, want)
		}
		name := attachment.Name(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, node)
		if _, err := e.client.StorageV1().VolumeAttachments().Get(e.ctx, name, metav1.GetOptions{}); err != nil {
			return "no VolumeAttachment " + name + ": " + err.Error()
		}
		if !slices.Contains(e.attachedOn(node), uniqueName(pv)) {
			return node + " does not report " + string(uniqueName(pv)) + " attached"
		}
		return ""
	}
}

func uniqueName(pv *corev1.PersistentVolume) corev1.UniqueVolumeName {
	return attachment.UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)
}

// attachedOn and inUseOn are node.status.volumesAttached and volumesInUse.
func (e *env) attachedOn(node string) []corev1.UniqueVolumeName {
	var out []corev1.UniqueVolumeName
	for _, a := range e.node(node).Status.VolumesAttached {
		out = append(out, a.Name)
	}
	return out
}

func (e *env) inUseOn(node string) []corev1.UniqueVolumeName { return e.node(node).Status.VolumesInUse }

func (e *env) node(name string) *corev1.Node {
	e.t.Helper()
	n, err := e.client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// publishedAt is the kubelet path the node agent publishes pv at for pod.
func publishedAt(pod *corev1.Pod, pv string) string {
	return filepath.Join(stack.DataDir(), "nodes", pod.Spec.NodeName, "pods", string(pod.UID), "volumes", "kubernetes.io~csi", pv, "mount")
}

// mounted says whether the shared FakeMounter has a mount at path.
func mounted(path string) bool {
	_, ok := stack.Mounter.Mounts()[path]
	return ok
}

// events are the events of the object name in the test's namespace.
func (e *env) events(name string) string {
	list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// classes of up.
const (
	networkClass = bundle.NetworkClass
	localClass   = bundle.ImmediateClass
)
