package nodeagent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volplane/volplane/test/e2e/support"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/stacktest"
)

// No resizer runs here: growByHand plays the controller side of an
// expansion to 2Mi. With a driver it grows the volume with
// ControllerExpandVolume (without one the backend keeps its 1Mi, so the
// node's NodeExpandVolume is refused); then, as the external-resizer does,
// it writes the PV's capacity and then the claim's status:
// allocatedResources, the storage resize status given, and the condition
// that goes with it.
func growByHand(t *testing.T, pv *corev1.PersistentVolume, driver *csi.Endpoint, status corev1.ClaimResourceStatus) {
	t.Helper()
	size := resource.MustParse("2Mi")
	if driver != nil {
		if _, _, err := driver.ControllerExpandVolume(ctx, &csipb.ControllerExpandVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle,
			CapacityRange: &csipb.CapacityRange{RequiredBytes: size.Value()}}); err != nil {
			t.Fatalf("ControllerExpandVolume: %v", err)
		}
	}
	client := bed.cp.Client
	pvPatch, _ := json.Marshal(map[string]any{"spec": map[string]any{"capacity": map[string]any{"storage": size.String()}}})
	if _, err := client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, pvPatch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	cond := map[string]any{"type": corev1.PersistentVolumeClaimFileSystemResizePending, "status": "True",
		"message": "Waiting for user to (re-)start a pod to finish file system resize of volume on node."}
	if status == corev1.PersistentVolumeClaimControllerResizeInProgress {
		cond = map[string]any{"type": corev1.PersistentVolumeClaimResizing, "status": "True"}
	}
	claimPatch, _ := json.Marshal(map[string]any{"status": map[string]any{
		"allocatedResources":        map[string]any{"storage": size.String()},
		"allocatedResourceStatuses": map[string]any{"storage": status},
		"conditions":                []any{cond}}})
	ref := pv.Spec.ClaimRef
	if _, err := client.CoreV1().PersistentVolumeClaims(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, claimPatch,
		metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}

func getClaim(t *testing.T, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	c, err := bed.cp.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// expandedOnNode says what is still missing for the claim to show a
// finished node expansion to 2Mi: the capacity, no storage resize status,
// no resize condition.
func expandedOnNode(c *corev1.PersistentVolumeClaim) string {
	got := c.Status.Capacity[corev1.ResourceStorage]
	switch {
	case got.Cmp(resource.MustParse("2Mi")) != 0:
		return "capacity " + got.String()
	case c.Status.AllocatedResourceStatuses != nil:
		return fmt.Sprintf("allocatedResourceStatuses %v", c.Status.AllocatedResourceStatuses)
	case len(support.ConditionsBesidesUnused(c)) > 0:
		return fmt.Sprintf("conditions %v", c.Status.Conditions)
	}
	return ""
}

// lastExpand is the last NodeExpandVolume the driver was sent for a
// volume, after checking it asked for 2Mi at the pod's publication.
func lastExpand(t *testing.T, pv *corev1.PersistentVolume, pod *corev1.Pod, node string) *csipb.NodeExpandVolumeRequest {
	t.Helper()
	calls := bed.tap.of(pv.Spec.CSI.VolumeHandle)
	if len(calls) == 0 {
		t.Fatal("the driver saw no NodeExpandVolume")
	}
	req := calls[len(calls)-1]
	l := layout(node)
	if req.GetVolumePath() != l.TargetPath(pod.UID, pv.Name) || req.GetStagingTargetPath() != l.StagingPath(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle) ||
		req.GetCapacityRange().GetRequiredBytes() != 2<<20 || req.GetVolumeCapability().GetMount() == nil {
		t.Errorf("NodeExpandVolume %v: want the publication %s, the staging path, 2Mi required and a mount capability", req, l.TargetPath(pod.UID, pv.Name))
	}
	return req
}

// Online: a running pod on an attached volume; once the controller side
// marks the claim NodeResizePending, the agent expands it in place and
// finishes the claim, with FileSystemResizeSuccessful on pod and claim.
func TestRunningPodsVolumeIsExpandedOnlineWhenTheClaimWaitsForTheNode(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[0]
	pv := boundClaimOf(t, ns, "net", bed.attachDriver)
	pod := runPod(t, ns, "app", node, "net")
	attachByHand(t, node, pv)
	waitRunning(t, pod)

	growByHand(t, pv, bed.attachDriver, corev1.PersistentVolumeClaimNodeResizePending)
	stacktest.Eventually(t, "claim expanded on the node", func() string { return expandedOnNode(getClaim(t, ns, "net")) }, alive)
	lastExpand(t, pv, pod, node)
	want := fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", pv.Name, node)
	for _, object := range []string{pod.Name, "net"} {
		stacktest.Eventually(t, "FileSystemResizeSuccessful on "+object, func() string {
			return hasEvent(t, ns, object, "FileSystemResizeSuccessful", want)
		}, alive)
	}
	deletePodAndWaitGone(t, pod)
}

// At next use: the claim waits for a node while no pod uses it; the pod
// that comes next has it expanded during its mount, before it runs.
func TestVolumeIsExpandedDuringTheMountOfTheNextPod(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	growByHand(t, pv, bed.drivers[node], corev1.PersistentVolumeClaimNodeResizePending)

	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)
	if missing := expandedOnNode(getClaim(t, ns, "data")); missing != "" {
		t.Errorf("pod Running before its claim was expanded: %s", missing)
	}
	lastExpand(t, pv, pod, node)
	stacktest.Eventually(t, "FileSystemResizeSuccessful on the pod", func() string {
		return hasEvent(t, ns, pod.Name, "FileSystemResizeSuccessful", fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", pv.Name, node))
	}, alive)
	deletePodAndWaitGone(t, pod)
}

// The gate: a PV that grew while the claim is not waiting for a node (the
// controller is still resizing) is not expanded by the node, and the pod
// runs all the same.
func TestNoNodeExpansionWhileTheClaimDoesNotWaitForTheNode(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	growByHand(t, pv, bed.drivers[node], corev1.PersistentVolumeClaimControllerResizeInProgress)

	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)
	stacktest.Holds(t, "no NodeExpandVolume, claim untouched", time.Second, func() string {
		if calls := bed.tap.of(pv.Spec.CSI.VolumeHandle); len(calls) > 0 {
			return fmt.Sprintf("NodeExpandVolume %v", calls)
		}
		c := getClaim(t, ns, "data")
		got := c.Status.Capacity[corev1.ResourceStorage]
		if got.Cmp(resource.MustParse("1Mi")) != 0 || c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimControllerResizeInProgress {
			return fmt.Sprintf("claim status changed: %+v", c.Status)
		}
		return ""
	})
	deletePodAndWaitGone(t, pod)
}

// A driver refusal that retrying cannot fix (the backend never grew, so
// the node is asked for more than the volume holds: OutOfRange): the pod
// gets VolumeResizeFailed, the claim NodeResizeInfeasible and the
// NodeResizeError condition, and the node stops trying.
func TestInfeasibleNodeExpansionIsReportedAndNotRetried(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)

	growByHand(t, pv, nil, corev1.PersistentVolumeClaimNodeResizePending)
	stacktest.Eventually(t, "VolumeResizeFailed on the pod", func() string {
		return hasEvent(t, ns, pod.Name, "VolumeResizeFailed", fmt.Sprintf("NodeExpandVolume.NodeExpandVolume failed for volume %q : Expander.NodeExpand failed to expand the volume rpc error: code = OutOfRange", pv.Name))
	}, alive)
	stacktest.Eventually(t, "claim NodeResizeInfeasible", func() string {
		c := getClaim(t, ns, "data")
		if s := c.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; s != corev1.PersistentVolumeClaimNodeResizeInfeasible {
			return fmt.Sprintf("status %q", s)
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == corev1.PersistentVolumeClaimNodeResizeError && strings.HasPrefix(cond.Message, "failed to expand pvc with ") &&
				strings.Contains(cond.Message, "OutOfRange") {
				return ""
			}
		}
		return fmt.Sprintf("conditions %v", c.Status.Conditions)
	}, alive)
	calls := len(bed.tap.of(pv.Spec.CSI.VolumeHandle))
	stacktest.Holds(t, "no retry once infeasible, pod still running", time.Second, func() string {
		if now := len(bed.tap.of(pv.Spec.CSI.VolumeHandle)); now != calls {
			return fmt.Sprintf("%d NodeExpandVolume calls after the claim went infeasible", now-calls)
		}
		return ""
	})
	waitRunning(t, pod)
	deletePodAndWaitGone(t, pod)
}

// A refusal during the mount of the next pod: the pod gets the kubelet's
// FailedMount for an expansion at mount; the refusal makes the claim
// NodeResizeInfeasible, which closes the gate, and the pod then starts on
// the volume as it is.
func TestExpansionRefusedAtMountIsAFailedMountThenThePodRuns(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	// Grown while the agent is stopped, so that its caches list the grown
	// PV before any pod: the PV's and the pod's watch events are not
	// ordered, and a pod seen before its PV's growth is mounted unexpanded
	// and then expanded online (the kubelet reads the PV live when it adds
	// a pod's volume; the agent reads its cache).
	bed.agent.stop()
	growByHand(t, pv, nil, corev1.PersistentVolumeClaimNodeResizePending)
	var err error
	if bed.agent, err = startAgent(); err != nil {
		t.Fatal(err)
	}

	pod := runPod(t, ns, "app", node, "data")
	stacktest.Eventually(t, "FailedMount while expanding", func() string {
		return hasEvent(t, ns, pod.Name, "FailedMount", fmt.Sprintf("MountVolume.Setup failed while expanding volume for volume %q : Expander.NodeExpand failed to expand the volume rpc error: code = OutOfRange", pv.Name))
	}, alive)
	waitRunning(t, pod)
	c := getClaim(t, ns, "data")
	if s := c.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; s != corev1.PersistentVolumeClaimNodeResizeInfeasible {
		t.Errorf("claim resize status %q, want NodeResizeInfeasible", s)
	}
	deletePodAndWaitGone(t, pod)
}

// A read-only mount is not expanded: the pod and the claim get the
// kubelet's FileSystemResizeFailed, the driver is not called, and the
// claim keeps waiting for a node that can expand it.
func TestReadOnlyMountIsNotExpanded(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}, Spec: corev1.PodSpec{NodeName: node,
		Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}}}}}}
	pod, err := bed.cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pod)

	growByHand(t, pv, bed.drivers[node], corev1.PersistentVolumeClaimNodeResizePending)
	want := fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q requested read-only file system", pv.Name)
	for _, object := range []string{pod.Name, "data"} {
		stacktest.Eventually(t, "FileSystemResizeFailed on "+object, func() string {
			return hasEvent(t, ns, object, "FileSystemResizeFailed", want)
		}, alive)
	}
	if calls := bed.tap.of(pv.Spec.CSI.VolumeHandle); len(calls) > 0 {
		t.Errorf("NodeExpandVolume called for a read-only mount: %v", calls)
	}
	if s := getClaim(t, ns, "data").Status.AllocatedResourceStatuses[corev1.ResourceStorage]; s != corev1.PersistentVolumeClaimNodeResizePending {
		t.Errorf("claim resize status %q, want NodeResizePending kept", s)
	}
	deletePodAndWaitGone(t, pod)
}

// An expansion the agent left in progress when it stopped (the claim says
// NodeResizeInProgress) is finished by the restarted agent: the state it
// resumes from is the claim's.
func TestRestartedAgentResumesANodeExpansionInProgress(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)

	bed.agent.stop()
	growByHand(t, pv, bed.drivers[node], corev1.PersistentVolumeClaimNodeResizeInProgress)
	var err error
	if bed.agent, err = startAgent(); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "claim expanded by the restarted agent", func() string { return expandedOnNode(getClaim(t, ns, "data")) }, alive)
	lastExpand(t, pv, pod, node)
	deletePodAndWaitGone(t, pod)
}

// A driver whose node service cannot expand (no EXPAND_VOLUME): the node
// finishes the claim without calling it, as the kubelet does for a plugin
// that needs no file system resize.
func TestNodeThatCannotExpandFinishesTheClaimWithoutACall(t *testing.T) {
	restartAgent(t, true)
	t.Cleanup(func() { restartAgent(t, false) })
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)

	growByHand(t, pv, bed.drivers[node], corev1.PersistentVolumeClaimNodeResizePending)
	stacktest.Eventually(t, "claim finished", func() string { return expandedOnNode(getClaim(t, ns, "data")) }, alive)
	if calls := bed.tap.of(pv.Spec.CSI.VolumeHandle); len(calls) > 0 {
		t.Errorf("NodeExpandVolume called on a node service without EXPAND_VOLUME: %v", calls)
	}
	deletePodAndWaitGone(t, pod)
}

// The kubelet asks the node service's capabilities before each decision
// (NodeSupportsNodeExpand...), not once: EXPAND_VOLUME hidden while the
// agent runs, it finishes the claim without a NodeExpandVolume.
func TestNodeCapabilitiesAreAskedAtEachDecision(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod) // the agent has dialed and probed the driver

	bed.tap.noNodeExpand.Store(true)
	t.Cleanup(func() { bed.tap.noNodeExpand.Store(false) })

	growByHand(t, pv, bed.drivers[node], corev1.PersistentVolumeClaimNodeResizePending)
	stacktest.Eventually(t, "claim finished", func() string { return expandedOnNode(getClaim(t, ns, "data")) }, alive)
	if calls := bed.tap.of(pv.Spec.CSI.VolumeHandle); len(calls) > 0 {
		t.Errorf("NodeExpandVolume called after the node service stopped saying EXPAND_VOLUME: %v", calls)
	}
	deletePodAndWaitGone(t, pod)
}

// restartAgent restarts the agent with the drivers' node EXPAND_VOLUME
// hidden or not: the agent learns the capabilities when it starts.
func restartAgent(t *testing.T, hideNodeExpand bool) {
	t.Helper()
	bed.agent.stop()
	bed.tap.noNodeExpand.Store(hideNodeExpand)
	var err error
	if bed.agent, err = startAgent(); err != nil {
		t.Fatal(err)
	}
}

// A driver that cannot grow a volume while it is in use (FailedPrecondition,
// the CSI spec's "volume in use"): the claim gets the NodeResizeError
// condition but stays waiting for the node, the running pod is left alone
// and the node does not try online again; the next pod's mount expands it.
func TestVolumeRefusedInUseIsExpandedAtTheNextMount(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	handle := pv.Spec.CSI.VolumeHandle
	bed.tap.refuseInUse(handle, true)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)

	growByHand(t, pv, bed.drivers[node], corev1.PersistentVolumeClaimNodeResizePending)
	stacktest.Eventually(t, "NodeResizeError, still waiting for the node", func() string {
		c := getClaim(t, ns, "data")
		if s := c.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; s != corev1.PersistentVolumeClaimNodeResizeInProgress {
			return fmt.Sprintf("status %q", s)
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == corev1.PersistentVolumeClaimNodeResizeError && strings.Contains(cond.Message, "FailedPrecondition") {
				return ""
			}
		}
		return fmt.Sprintf("conditions %v", c.Status.Conditions)
	}, alive)
	calls := len(bed.tap.of(handle))
	poke, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"poke": "1"}}})
	if _, err := bed.cp.Client.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "data", types.MergePatchType, poke, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Holds(t, "not tried online again", time.Second, func() string {
		if now := len(bed.tap.of(handle)); now != calls {
			return fmt.Sprintf("%d more NodeExpandVolume calls", now-calls)
		}
		return ""
	})

	bed.tap.refuseInUse(handle, false)
	deletePodAndWaitGone(t, pod)
	next := runPod(t, ns, "next", node, "data")
	waitRunning(t, next)
	if missing := expandedOnNode(getClaim(t, ns, "data")); missing != "" {
		t.Errorf("after the next mount: %s", missing)
	}
	lastExpand(t, pv, next, node)
	deletePodAndWaitGone(t, next)
}

// A ReadWriteMany claim that another node finished expanding (capacity
// already 2Mi, no resize status left, no node-expansion-not-required
// annotation): this node expands its own use of the volume too, and writes
// nothing to the claim.
func TestReadWriteManyVolumeIsExpandedOnEveryNodeUsingIt(t *testing.T) {
	expandedByAnotherNode(t, pvFirst)
}

// The agent's informers see the PV and the claim on two watches, in either
// order: a claim finished by another node may be seen before its PV's new
// capacity. The PV's change must then wake the running pod (it once woke
// only pods waiting to mount, and CI saw this node never expand).
func TestReadWriteManyVolumeIsExpandedWhenItsPVIsSeenAfterTheClaim(t *testing.T) {
	expandedByAnotherNode(t, claimFirst)
}

// Another node finished the expansion while this node's agent was
// stopped: the restarted agent's first look at its running pod expands
// the volume here too, as the kubelet's reconstruction does (no resize
// status is left on the claim to say so).
func TestReadWriteManyVolumeGrownWhileTheAgentWasStoppedIsExpandedWhenItStarts(t *testing.T) {
	expandedByAnotherNode(t, whileStopped)
}

// How expandedByAnotherNode writes the PV and the claim.
const (
	pvFirst = iota
	claimFirst
	whileStopped
)

// expandedByAnotherNode plays another node finishing the expansion of a
// ReadWriteMany claim whose pod runs here: the volume grown to 2Mi, the PV's
// capacity and the claim's status written, the PV first (as the resizer and
// then the other node do), the claim first (as this node's informers may
// see them), or the PV first while this node's agent is stopped. This node
// expands too, and writes nothing.
func expandedByAnotherNode(t *testing.T, order int) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaimOf(t, ns, "shared", bed.drivers[node], func(c *corev1.PersistentVolumeClaim) {
		c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	})
	pod := runPod(t, ns, "app", node, "shared")
	waitRunning(t, pod)

	if _, _, err := bed.drivers[node].ControllerExpandVolume(ctx, &csipb.ControllerExpandVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 2 << 20}}); err != nil {
		t.Fatal(err)
	}
	growPV := func() {
		grown, _ := json.Marshal(map[string]any{"spec": map[string]any{"capacity": map[string]any{"storage": "2Mi"}}})
		if _, err := bed.cp.Client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, grown, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var claim *corev1.PersistentVolumeClaim
	finishClaim := func() {
		finished, _ := json.Marshal(map[string]any{"status": map[string]any{
			"capacity": map[string]any{"storage": "2Mi"}, "allocatedResources": map[string]any{"storage": "2Mi"}}})
		var err error
		if claim, err = bed.cp.Client.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "shared", types.MergePatchType, finished, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	switch order {
	case claimFirst:
		finishClaim()
		growPV()
	case whileStopped:
		bed.agent.stop()
		growPV()
		finishClaim()
		var err error
		if bed.agent, err = startAgent(); err != nil {
			t.Fatal(err)
		}
	default:
		growPV()
		finishClaim()
	}
	stacktest.Eventually(t, "expanded on this node too", func() string {
		if len(bed.tap.of(pv.Spec.CSI.VolumeHandle)) == 0 {
			return "no NodeExpandVolume"
		}
		return hasEvent(t, ns, pod.Name, "FileSystemResizeSuccessful", fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", pv.Name, node))
	}, alive)
	lastExpand(t, pv, pod, node)
	if got := getClaim(t, ns, "shared"); got.ResourceVersion != claim.ResourceVersion {
		t.Errorf("the claim was written after the other node finished it: %+v", got.Status)
	}
	deletePodAndWaitGone(t, pod)
}
