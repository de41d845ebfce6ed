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
// every volume of its nodes when it stops, the nodes at once, and writes
// nothing: the pods stay Running, their nodes keep reporting the volumes
// in use. The next agent mounts them again for the running pods, stage
// then publish.
func TestCleanStopUnmountsAndTheNextStartMountsAgain(t *testing.T) {
	ns := stacktest.Namespace(t)
	type use struct {
		pod             *corev1.Pod
		staging, target string
		records         string
	}
	var uses []use
	for i, node := range bed.cp.Nodes {
		pv := boundClaim(t, ns, fmt.Sprint("data-", i), node)
		pod := runPod(t, ns, fmt.Sprint("app-", i), node, fmt.Sprint("data-", i))
		l := layout(node)
		uses = append(uses, use{pod: pod, staging: l.StagingPath(hostpath.DriverName, pv.Spec.CSI.VolumeHandle), target: l.TargetPath(pod.UID, pv.Name),
			records: filepath.Join(bed.dir, "nodes", node, "pods", string(pod.UID), "volumes", "*", "*", "vol_data.json")})
	}
	for _, u := range uses {
		waitRunning(t, u.pod)
		if !mounted(u.staging) || !mounted(u.target) {
			t.Fatalf("before the stop, %s: staging mounted %v, target mounted %v", u.pod.Spec.NodeName, mounted(u.staging), mounted(u.target))
		}
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
	for _, u := range uses {
		if mounted(u.staging) || mounted(u.target) {
			t.Errorf("after a clean stop, %s: staging mounted %v, target mounted %v", u.pod.Spec.NodeName, mounted(u.staging), mounted(u.target))
		}
		if records, _ := filepath.Glob(u.records); len(records) != 0 {
			t.Errorf("publication records left after a clean stop: %v", records)
		}
		p, err := bed.cp.Client.CoreV1().Pods(ns).Get(ctx, u.pod.Name, metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			t.Errorf("the stop changed pod %s: %v", u.pod.Name, err)
		}
	}

	if bed.agent, err = startAgent(); err != nil {
		t.Fatal(err)
	}
	for _, u := range uses {
		stacktest.Eventually(t, "mounted again for the running pod on "+u.pod.Spec.NodeName, func() string {
			if !mounted(u.staging) || !mounted(u.target) {
				return fmt.Sprintf("staging mounted %v, target mounted %v", mounted(u.staging), mounted(u.target))
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(u.target), "vol_data.json")); err != nil {
				return err.Error()
			}
			return ""
		}, alive)
		waitRunning(t, u.pod)
	}
	for _, u := range uses {
		deletePodAndWaitGone(t, u.pod)
	}
}
