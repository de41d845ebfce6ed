package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/nodeagent"
	"github.com/volplane/volplane/internal/stacktest"
)

// An agent with UnmountOnStop (as `up` runs it) unpublishes and unstages
// every volume of its nodes when it stops, and writes nothing: the pod
// stays Running, its node keeps reporting the volume in use. The next
// agent mounts it again for the running pod, stage then publish.
func TestCleanStopUnmountsAndTheNextStartMountsAgain(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[1]
	pv := boundClaim(t, ns, "data", node)
	pod := runPod(t, ns, "app", node, "data")
	waitRunning(t, pod)
	l := layout(node)
	staging, target := l.StagingPath(hostpath.DriverName, pv.Spec.CSI.VolumeHandle), l.TargetPath(pod.UID, pv.Name)
	if !mounted(staging) || !mounted(target) {
		t.Fatalf("before the stop: staging mounted %v, target mounted %v", mounted(staging), mounted(target))
	}

	// The running agent becomes one that unmounts on stop, then stops.
	bed.agent.stop()
	dialed := bed.tap.nodeInfos.Load()
	var err error
	if bed.agent, err = startAgentWith(func(c *nodeagent.Config) { c.UnmountOnStop = true }); err != nil {
		t.Fatal(err)
	}
	// Once it has asked each of its three node services NodeGetInfo, the
	// agent holds their endpoints: a stop from then on unmounts.
	stacktest.Eventually(t, "agent dialed its drivers", func() string {
		if n := bed.tap.nodeInfos.Load() - dialed; n < 3 {
			return fmt.Sprintf("%d NodeGetInfo calls", n)
		}
		return ""
	}, alive)
	bed.agent.stop()
	if mounted(staging) || mounted(target) {
		t.Errorf("after a clean stop: staging mounted %v, target mounted %v", mounted(staging), mounted(target))
	}
	records, _ := filepath.Glob(filepath.Join(bed.dir, "nodes", node, "pods", string(pod.UID), "volumes", "*", "*", "vol_data.json"))
	if len(records) != 0 {
		t.Errorf("publication records left after a clean stop: %v", records)
	}
	p, err := bed.cp.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		t.Errorf("the stop changed the pod: %v", err)
	}

	if bed.agent, err = startAgent(); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "mounted again for the running pod", func() string {
		if !mounted(staging) || !mounted(target) {
			return fmt.Sprintf("staging mounted %v, target mounted %v", mounted(staging), mounted(target))
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(target), "vol_data.json")); err != nil {
			return err.Error()
		}
		return ""
	}, alive)
	waitRunning(t, pod)
	deletePodAndWaitGone(t, pod)
}
