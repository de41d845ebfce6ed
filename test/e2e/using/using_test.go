package using

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/stacktest"
)

// A pod using a network volume runs once the volume is attached to its
// node and published at the kubelet's path; deleting it unpublishes and
// detaches, and deleting the claim then reclaims the volume.
func TestPodRunsOnAnAttachedVolumeAndTheVolumeIsReclaimedAfterIt(t *testing.T) {
	e := newEnv(t)
	e.claim("data", networkClass, corev1.ReadWriteOnce)
	e.pod("app", "node-1", "data")
	pv := e.volume("data")
	pod := e.waitRunning("app")
	e.eventually("attached to node-1 only", e.attachedOnlyTo(pv, "node-1"))
	if !slices.Contains(e.inUseOn("node-1"), uniqueName(pv)) {
		t.Errorf("node-1 volumesInUse %v lacks %s", e.inUseOn("node-1"), uniqueName(pv))
	}
	if !mounted(publishedAt(pod, pv.Name)) {
		t.Errorf("nothing mounted at %s", publishedAt(pod, pv.Name))
	}
	if ev := e.events("app"); !strings.Contains(ev, fmt.Sprintf(`SuccessfulAttachVolume: AttachVolume.Attach succeeded for volume %q `, pv.Name)) {
		t.Errorf("pod events %s lack SuccessfulAttachVolume", ev)
	}

	e.deletePod("app")
	e.eventually("detached from node-1", func() string {
		switch {
		case len(e.attachmentsOf(pv.Name)) != 0:
			return fmt.Sprintf("attachments %v", e.attachmentsOf(pv.Name))
		case slices.Contains(e.inUseOn("node-1"), uniqueName(pv)):
			return "still in use on node-1"
		case slices.Contains(e.attachedOn("node-1"), uniqueName(pv)):
			return "still reported attached on node-1"
		case mounted(publishedAt(pod, pv.Name)):
			return "still mounted"
		}
		return ""
	})
	if err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("PV reclaimed", func() string {
		_, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, pv.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("PV still there (%v)", err)
	})
}

// A single-node volume follows its pod: used on node-1, then by a pod on
// node-2, which waits with the reference's Multi-Attach event while the
// first pod lives and runs once it is gone, attached to node-2 only.
func TestSingleNodeVolumeFollowsItsPodAfterMultiAttachWaits(t *testing.T) {
	e := newEnv(t)
	e.claim("data", networkClass, corev1.ReadWriteOnce)
	e.pod("first", "node-1", "data")
	pv := e.volume("data")
	e.waitRunning("first")
	e.pod("second", "node-2", "data")
	want := fmt.Sprintf("FailedAttachVolume: Waiting for detach for volume %q Volume is already used by pod(s) first", pv.Name)
	e.eventually("Multi-Attach event on the second pod", func() string {
		if ev := e.events("second"); !strings.Contains(ev, want) {
			return "events " + ev
		}
		return ""
	})
	if got := e.attachmentsOf(pv.Name); len(got) != 1 {
		t.Errorf("attachments while the first pod lives: %v, want node-1's only", got)
	}
	if p := e.getPod("second"); p.Status.Phase == corev1.PodRunning {
		t.Error("the second pod runs while the volume is attached to node-1")
	}
	e.deletePod("first")
	e.waitRunning("second")
	e.eventually("attached to node-2 only", e.attachedOnlyTo(pv, "node-2"))
}

// A node-local volume needs no attaching: its pod runs with no
// VolumeAttachment and nothing in the node's attached or in-use lists.
func TestNodeLocalVolumeRunsWithoutAttachment(t *testing.T) {
	e := newEnv(t)
	e.claim("local", localClass, corev1.ReadWriteOnce)
	pv := e.volume("local")
	node := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
	e.pod("app", node, "local")
	pod := e.waitRunning("app")
	if got := e.attachmentsOf(pv.Name); len(got) != 0 {
		t.Errorf("attachments of a node-local volume: %v", got)
	}
	if slices.Contains(e.inUseOn(node), uniqueName(pv)) || slices.Contains(e.attachedOn(node), uniqueName(pv)) {
		t.Errorf("%s lists the node-local volume: in use %v, attached %v", node, e.inUseOn(node), e.attachedOn(node))
	}
	if !mounted(publishedAt(pod, pv.Name)) {
		t.Errorf("nothing mounted at %s", publishedAt(pod, pv.Name))
	}
}

// A pod with no volume of ours runs at once; a pod whose claim does not
// exist is not scheduled.
func TestPodWithoutVolumesRunsAndOneWithAMissingClaimWaits(t *testing.T) {
	e := newEnv(t)
	e.pod("plain", "node-3", "")
	e.waitRunning("plain")
	e.pod("orphan", "node-3", "missing")
	e.eventually("orphan pod unschedulable", func() string {
		for _, c := range e.getPod("orphan").Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return ""
			}
		}
		return "not marked unschedulable; events " + e.events("orphan")
	})
}

// The loops and the node agent die between steps and are restarted: the
// pod still runs, its deletion still completes, and nothing is attached or
// mounted twice or left behind (the invariant checker at the end).
func TestControllerAndAgentRestartedBetweenStepsLeakNothing(t *testing.T) {
	e := newEnv(t)
	// Whatever happens, the stack runs again before the namespace's
	// teardown (cleanups run last in, first out) and the next test.
	t.Cleanup(func() {
		if stack.Loops == nil {
			stack.StartLoops()
		}
		if !stack.AgentRunning() {
			if err := stack.StartAgent(); err != nil {
				t.Error(err)
			}
		}
	})
	restartLoops := func() {
		t.Helper()
		if err := stack.StopLoops(); err != nil {
			t.Fatal(err)
		}
		stack.StartLoops()
	}
	e.claim("data", networkClass, corev1.ReadWriteOnce)
	pv := e.volume("data")
	// The controller dies as soon as the VolumeAttachment exists.
	e.pod("app", "node-2", "data")
	e.eventually("VolumeAttachment created", func() string {
		if len(e.attachmentsOf(pv.Name)) == 0 {
			return "none yet"
		}
		return ""
	})
	restartLoops()
	// The agent dies while the pod is coming up and again once it runs.
	if err := stack.StopAgent(); err != nil {
		t.Fatal(err)
	}
	if err := stack.StartAgent(); err != nil {
		t.Fatal(err)
	}
	pod := e.waitRunning("app")
	e.eventually("attached to node-2 only", e.attachedOnlyTo(pv, "node-2"))
	if err := stack.StopAgent(); err != nil {
		t.Fatal(err)
	}
	restartLoops()
	if err := stack.StartAgent(); err != nil {
		t.Fatal(err)
	}
	if !mounted(publishedAt(pod, pv.Name)) {
		t.Errorf("nothing mounted at %s after the restarts", publishedAt(pod, pv.Name))
	}
	// Deleted while the agent is down: torn down once it is back.
	if err := stack.StopAgent(); err != nil {
		t.Fatal(err)
	}
	if err := e.client.CoreV1().Pods(e.ns).Delete(e.ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := stack.StartAgent(); err != nil {
		t.Fatal(err)
	}
	e.deletePod("app") // already deleting: waits until it is gone
	e.eventually("detached after the restarts", func() string {
		if got := e.attachmentsOf(pv.Name); len(got) != 0 {
			return fmt.Sprintf("attachments %v", got)
		}
		if mounted(publishedAt(pod, pv.Name)) {
			return "still mounted"
		}
		return ""
	})
}

// A node whose agent is gone keeps reporting the volume of a force-deleted
// pod in use, so the volume stays attached; the out-of-service taint lets
// attachdetach detach it anyway (the reference checks the key only). Once
// the agent is back it unmounts what no pod uses any more.
func TestOutOfServiceTaintDetachesAVolumeStillInUse(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() {
		e.setOutOfService("node-3", false)
		if !stack.AgentRunning() {
			if err := stack.StartAgent(); err != nil {
				t.Error(err)
			}
		}
	})
	e.claim("data", networkClass, corev1.ReadWriteOnce)
	e.pod("app", "node-3", "data")
	pv := e.volume("data")
	pod := e.waitRunning("app")
	e.eventually("attached to node-3", e.attachedOnlyTo(pv, "node-3"))
	if err := stack.StopAgent(); err != nil {
		t.Fatal(err)
	}
	if err := e.client.CoreV1().Pods(e.ns).Delete(e.ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	e.deletePod("app")
	stacktest.Holds(t, "attached while node-3 reports it in use", 2*time.Second, func() string {
		if got := e.attachmentsOf(pv.Name); len(got) != 1 {
			return fmt.Sprintf("attachments %v", got)
		}
		return ""
	})
	e.setOutOfService("node-3", true)
	e.eventually("detached from the out-of-service node", func() string {
		if got := e.attachmentsOf(pv.Name); len(got) != 0 {
			return fmt.Sprintf("attachments %v; node-3 in use %v", got, e.inUseOn("node-3"))
		}
		return ""
	})
	e.setOutOfService("node-3", false)
	if err := stack.StartAgent(); err != nil {
		t.Fatal(err)
	}
	e.eventually("the orphaned publication torn down", func() string {
		if mounted(publishedAt(pod, pv.Name)) {
			return "still mounted at " + publishedAt(pod, pv.Name)
		}
		if slices.Contains(e.inUseOn("node-3"), uniqueName(pv)) {
			return "still in use on node-3"
		}
		return ""
	})
}

// setOutOfService puts the out-of-service taint on node, or takes it off.
func (e *env) setOutOfService(node string, on bool) {
	e.t.Helper()
	n := e.node(node).DeepCopy()
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == attachment.OutOfServiceTaint })
	if on {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: attachment.OutOfServiceTaint, Value: "shutdown", Effect: corev1.TaintEffectNoExecute})
	}
	if _, err := e.client.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}
