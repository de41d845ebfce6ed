package nodeagent

import (
	"fmt"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// A pod using a bound claim on node-1: the driver is registered in the
// node's CSINode, the volume is staged and published at the kubelet's
// paths, and the pod runs; deleting it unpublishes, completes the
// deletion, unstages and removes the pod's directory.
func TestPodWithClaimIsStagedPublishedRunningThenTornDownOnDelete(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[0]
	pv := boundClaim(t, ns, "data", node)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)

	l := layout(node)
	staging, target := l.StagingPath(hostpath.DriverName, pv.Spec.CSI.VolumeHandle), l.TargetPath(pod.UID, pv.Name)
	if !mounted(staging) || !mounted(target) {
		t.Fatalf("staging %s mounted %v, target %s mounted %v; mounts %v", staging, mounted(staging), target, mounted(target), bed.mounter.Mounts())
	}
	csiNode, err := bed.cp.Client.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || len(csiNode.Spec.Drivers) != 2 || csiNode.Spec.Drivers[1].Name != hostpath.DriverName ||
		csiNode.Spec.Drivers[1].NodeID != node || len(csiNode.Spec.Drivers[1].TopologyKeys) != 1 {
		t.Fatalf("CSINode %v, %v: want the hostpath driver with node ID %s and its topology key", csiNode, err, node)
	}

	deletePodAndWaitGone(t, pod)
	if mounted(target) {
		t.Errorf("after the pod's deletion: target %s still mounted", target)
	}
	waitTornDown(t, staging, l.PodDir(pod.UID), l.StagingDir(hostpath.DriverName, pv.Spec.CSI.VolumeHandle))
}

// The kubelet lets a deleted pod's object go once its volumes are
// unpublished (podVolumesExist), not once they are unstaged: with the
// driver refusing NodeUnstageVolume, the pod still goes, the staging stays
// mounted, and it is unstaged once the driver agrees.
func TestDeletedPodGoesOnceUnpublishedBeforeItsVolumeIsUnstaged(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[0]
	pv := boundClaim(t, ns, "data", node)
	handle := pv.Spec.CSI.VolumeHandle
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)
	l := layout(node)
	staging, target := l.StagingPath(hostpath.DriverName, handle), l.TargetPath(pod.UID, pv.Name)

	bed.tap.refuseCall(t, "NodeUnstageVolume", handle, codes.Internal)
	deletePodAndWaitGone(t, pod)
	if mounted(target) || !mounted(staging) {
		t.Fatalf("pod gone: target mounted %v (want false), staging mounted %v (want true)", mounted(target), mounted(staging))
	}
	if len(bed.tap.callsOf("NodeUnpublishVolume", handle)) == 0 {
		t.Errorf("pod gone with no NodeUnpublishVolume")
	}
	bed.tap.allowCall("NodeUnstageVolume", handle)
	waitTornDown(t, staging, l.PodDir(pod.UID), l.StagingDir(hostpath.DriverName, handle))
}

// waitTornDown waits for each path to be neither mounted nor on disk.
func waitTornDown(t *testing.T, paths ...string) {
	t.Helper()
	stacktest.Eventually(t, "torn down", func() string {
		for _, p := range paths {
			if mounted(p) {
				return p + " still mounted"
			}
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				return fmt.Sprintf("%s left behind: %v", p, err)
			}
		}
		return ""
	}, alive)
}

func TestPodWithoutVolumesRunsAtOnce(t *testing.T) {
	ns := stacktest.Namespace(t)
	waitRunning(t, runPod(t, ns, "plain", bed.cp.Nodes[1]))
}

// A pod whose claim does not exist, or is not bound, stays Pending with the
// kubelet's FailedMount event.
func TestPodWithMissingOrUnboundClaimWaitsWithFailedMount(t *testing.T) {
	ns := stacktest.Namespace(t)
	pod := runPod(t, ns, "lost", bed.cp.Nodes[0], "nothing")
	stacktest.Eventually(t, "FailedMount event", func() string {
		return hasEvent(t, ns, pod.Name, "FailedMount",
			`Unable to attach or mount volumes: unmounted volumes=[vol-nothing], unattached volumes=[], failed to process volumes=[vol-nothing]: error processing PVC `+ns+`/nothing: failed to fetch PVC from API server: persistentvolumeclaims "nothing" not found`)
	}, alive)
	stacktest.Holds(t, "pod stays Pending", 2*time.Second, func() string {
		p, err := bed.cp.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || p.Status.Phase == "Running" {
			return fmt.Sprintf("phase %v, %v", p.Status.Phase, err)
		}
		return ""
	})
}

// The agent stopped after publishing and restarted: it stages nothing twice
// (the record on disk says done) and tears down a pod deleted while it was
// down.
func TestRestartedAgentCarriesOnAndTearsDownWhatWasDeletedMeanwhile(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)
	l := layout(node)
	staging, target := l.StagingPath(hostpath.DriverName, pv.Spec.CSI.VolumeHandle), l.TargetPath(pod.UID, pv.Name)

	bed.agent.stop()
	if err := bed.cp.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Holds(t, "nothing torn down while the agent is down", time.Second, func() string {
		if !mounted(staging) || !mounted(target) {
			return "a mount went away with no agent running"
		}
		return ""
	})
	var err error
	if bed.agent, err = startAgent(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pod)
	if mounted(target) {
		t.Errorf("after restart: target %s still mounted", target)
	}
	waitTornDown(t, staging)
}
