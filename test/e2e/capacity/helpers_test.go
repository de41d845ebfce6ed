package capacity

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/volplane/volplane/internal/bundle"
	capacitycore "github.com/volplane/volplane/internal/capacity"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// objectsNamespace is where `up`'s capacity loop publishes; waitClass is
// the node-local driver's WaitForFirstConsumer class.
const (
	objectsNamespace = "kube-system"
	waitClass        = bundle.WaitClass
)

// objects are the node-local driver's published objects of class, by node.
func objects(ctx context.Context, class string) (map[string]storagev1.CSIStorageCapacity, error) {
	list, err := bed.cp.Client.StorageV1().CSIStorageCapacities(objectsNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: capacitycore.DriverNameLabel + "=" + hostpath.DriverName})
	if err != nil {
		return nil, err
	}
	out := map[string]storagev1.CSIStorageCapacity{}
	for _, o := range list.Items {
		if o.StorageClassName == class && o.NodeTopology != nil {
			out[o.NodeTopology.MatchLabels[cluster.NodeTopologyKey]] = o
		}
	}
	return out, nil
}

// published: each node of want has exactly one object of class, publishing
// want[node] bytes; no other node has one.
func published(ctx context.Context, class string, want map[string]int64) func() string {
	return func() string {
		got, err := objects(ctx, class)
		if err != nil {
			return err.Error()
		}
		if len(got) != len(want) {
			return fmt.Sprintf("%d objects of class %s, want %d", len(got), class, len(want))
		}
		for node, bytes := range want {
			o, ok := got[node]
			if !ok || o.Capacity == nil || o.Capacity.Value() != bytes {
				return fmt.Sprintf("node %s: object %v, want capacity %d", node, o.Capacity, bytes)
			}
		}
		return ""
	}
}

// everyNode is bytes on every node.
func everyNode(bytes int64) map[string]int64 {
	out := map[string]int64{}
	for _, n := range bed.cp.Nodes {
		out[n] = bytes
	}
	return out
}

// workload is claims of the node-local WaitForFirstConsumer class, each
// used by a pod of the same name that the scheduler places.
type workload struct {
	t   *testing.T
	ctx context.Context
	ns  string
	uid map[string]string // claim name → UID
}

func newWorkload(t *testing.T) *workload {
	w := &workload{t: t, ctx: t.Context(), ns: stacktest.Namespace(t), uid: map[string]string{}}
	t.Cleanup(w.removeAll)
	return w
}

// start creates the claim and the pod name.
func (w *workload) start(name, class string) { w.startOn(name, class, "") }

// startOn is start with the pod bound to node by its hostname label ("":
// anywhere).
func (w *workload) startOn(name, class, node string) {
	w.t.Helper()
	c, err := bed.cp.Client.CoreV1().PersistentVolumeClaims(w.ns).Create(w.ctx, support.Claim(w.ns, name, class, claimSize), metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	w.uid[name] = string(c.UID)
	if _, err := bed.cp.Client.CoreV1().Pods(w.ns).Create(w.ctx, support.Pod(w.ns, name, node, name), metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *workload) running(name string) {
	w.t.Helper()
	stacktest.Eventually(w.t, "pod "+name+" running", stacktest.PodRunning(w.ctx, bed.cp.Client, w.ns, name), alive)
}

func (w *workload) uids() []string {
	var out []string
	for _, u := range w.uid {
		out = append(out, u)
	}
	return out
}

// node is where the pod name runs.
func (w *workload) node(name string) string {
	p, err := bed.cp.Client.CoreV1().Pods(w.ns).Get(w.ctx, name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return p.Spec.NodeName
}

// failures counts the ProvisioningFailed events of claim name: each is a
// node handed back, by the driver's ResourceExhausted or by the
// provisioner's own accounting.
func (w *workload) failures(name string) (n int32, messages []string) {
	evs, err := bed.cp.Client.CoreV1().Events(w.ns).List(w.ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.name", name), fields.OneTermEqualSelector("reason", "ProvisioningFailed")).String()})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, e := range evs.Items {
		n += max(e.Count, 1)
		messages = append(messages, e.Message)
	}
	return n, messages
}

// removeAll deletes the pods and claims and waits until every node's
// capacity is whole again, so that the next test starts from empty nodes.
func (w *workload) removeAll() {
	ctx := context.Background()
	client := bed.cp.Client
	_ = client.CoreV1().Pods(w.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
	_ = client.CoreV1().PersistentVolumeClaims(w.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	stacktest.Eventually(w.t, "the test's volumes deleted", func() string {
		pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for _, pv := range pvs.Items {
			if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == w.ns {
				return "volume " + pv.Name + " still there"
			}
		}
		return ""
	}, alive)
	stacktest.Eventually(w.t, "every node's capacity whole again", published(ctx, waitClass, everyNode(nodeCapacity)), alive)
}

// onNodes counts the pods of names per node.
func (w *workload) onNodes(names []string) map[string]int {
	out := map[string]int{}
	for _, n := range names {
		out[w.node(n)]++
	}
	return out
}

// unschedulable: the pod name was found to fit no node.
func (w *workload) unschedulable(name, because string) func() string {
	return func() string {
		p, err := bed.cp.Client.CoreV1().Pods(w.ns).Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled })
		if i < 0 || p.Status.Conditions[i].Reason != corev1.PodReasonUnschedulable || !strings.Contains(p.Status.Conditions[i].Message, because) {
			return fmt.Sprintf("pod %s: conditions %v", name, p.Status.Conditions)
		}
		return ""
	}
}
