package nodeagent

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// A node taken down is a crashed kubelet: a pod deleted there stays
// Terminating with its volume mounted, and a new pod there stays Pending.
// Brought up, the agent wakes the node at once (well before its 15s
// resync): the deleted pod is torn down and goes, the new one runs.
func TestDownNodeIsLeftAloneUntilItIsUp(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	boundClaim(t, ns, "late", node)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)
	l := layout(node)
	staging, target := l.StagingPath(hostpath.DriverName, pv.Spec.CSI.VolumeHandle), l.TargetPath(pod.UID, pv.Name)

	bed.down.Set(node, true)
	t.Cleanup(func() { bed.down.Set(node, false) })
	if err := bed.cp.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	late := runPod(t, ns, "late", node, "late")
	stacktest.Holds(t, "nothing done for the down node", time.Second, func() string {
		if !mounted(staging) || !mounted(target) {
			return "a mount of the deleted pod went away"
		}
		if _, err := bed.cp.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
			return fmt.Sprintf("the deleted pod: %v", err)
		}
		p, err := bed.cp.Client.CoreV1().Pods(ns).Get(ctx, late.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Sprintf("the new pod: %v", err)
		}
		if p.Status.Phase != corev1.PodPending {
			return fmt.Sprintf("the new pod is %s", p.Status.Phase)
		}
		return ""
	})

	woken := time.Now()
	bed.down.Set(node, false)
	waitGone(t, pod)
	waitTornDown(t, staging, target)
	waitRunning(t, late)
	if d := time.Since(woken); d > 10*time.Second {
		t.Errorf("the node's work took %s after it came up: not woken, left to the resync", d)
	}
}
