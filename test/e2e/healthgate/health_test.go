package healthgate

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/health"
	"github.com/volplane/volplane/internal/mounting"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// Remove a running pod's volume directory behind the driver's back: with
// the gate on, the claim's status.healthStatus and the pod's
// status.volumeHealth entry say Inaccessible/DataMissing, beside the
// events; put it back: the claim's field is cleared and the pod's entry
// holds no condition (as the kubelet writes it), with the Normal events.
// A claim of another tenant naming the victim's PV in spec.volumeName,
// and that tenant's pod using it, get no field and no event.
func TestGateOnWritesClaimAndPodHealthAndClearsIt(t *testing.T) {
	ctx, client := context.Background(), stack.CP.Client
	ns, other := stacktest.Namespace(t), stacktest.Namespace(t)
	node := stack.CP.Nodes[0]
	handle := support.VictimAndThief(t, client, stack.EndedEarly, ns, other, node, bundle.WaitClass)
	if _, err := client.CoreV1().Pods(other).Create(ctx, support.Pod(other, "thief", node, "thief"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(stack.DataDir(), "hostpath", node, "volumes", handle)
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	const missing = string(corev1.VolumeHealthInaccessible) + "/" + "DataMissing"
	waitClaimHealth(t, ns, "data", missing)
	waitPodHealth(t, ns, "app", "data", missing)
	support.WaitEvent(t, client, stack.EndedEarly, ns, "data", health.ReasonAbnormal, missing)
	support.WaitEvent(t, client, stack.EndedEarly, ns, "app", health.ReasonAbnormal, missing)

	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	waitClaimHealth(t, ns, "data", "")
	waitPodHealth(t, ns, "app", "data", "")
	support.WaitEvent(t, client, stack.EndedEarly, ns, "data", health.ReasonNormal, health.RecoveredMessage)
	support.WaitEvent(t, client, stack.EndedEarly, ns, "app", health.ReasonNormal, "")

	// The monitor and the agent went over every volume several times meanwhile.
	for _, name := range []string{"thief"} {
		if got := healthEvents(t, other, name); len(got) != 0 {
			t.Errorf("events on %s/%s, which names another tenant's volume: %v, want none", other, name, got)
		}
	}
	c, err := client.CoreV1().PersistentVolumeClaims(other).Get(ctx, "thief", metav1.GetOptions{})
	if err != nil || c.Status.HealthStatus != nil {
		t.Errorf("claim %s/thief: healthStatus %+v (%v), want none", other, c.Status.HealthStatus, err)
	}
	p, err := client.CoreV1().Pods(other).Get(ctx, "thief", metav1.GetOptions{})
	if err != nil || len(p.Status.VolumeHealth) != 0 {
		t.Errorf("pod %s/thief: volumeHealth %+v (%v), want none", other, p.Status.VolumeHealth, err)
	}
}

// A raw block volume's health is asked at the paths its NodeStageVolume
// and NodePublishVolume got (CSI 1.13: staging_target_path when the
// driver stages, volume_publish_path), and the driver answers them; its
// backing file removed, the pod's entry says so, and clears when it is back.
func TestBlockVolumeHealthIsAskedAtItsStagingAndTargetPaths(t *testing.T) {
	ctx, client := context.Background(), stack.CP.Client
	ns := stacktest.Namespace(t)
	node := stack.CP.Nodes[1]
	block := corev1.PersistentVolumeBlock
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, support.Claim(ns, "raw", bundle.WaitClass, "16Mi",
		func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = &block }), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := support.Pod(ns, "app", node, "raw")
	pod.Spec.Containers[0].VolumeMounts = nil
	pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod = waitRunning(t, ns, "app")
	claim, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "raw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	handle := support.VolumeHandle(t, client, ns, "raw")
	l := mounting.Layout{Root: mounting.NodeRoot(stack.DataDir(), node)}
	staging, target := l.BlockStagingPath(claim.Spec.VolumeName), l.BlockPublishPath(claim.Spec.VolumeName, pod.UID)
	stacktest.Eventually(t, "NodeGetVolumeHealth of the block volume", func() string {
		calls := calls.of(handle)
		if len(calls) == 0 {
			return "no call yet"
		}
		last := calls[len(calls)-1]
		if last.req.GetStagingTargetPath() != staging || last.req.GetVolumePublishPath() != target || last.err != nil {
			return "last call " + last.req.String() + " answered " + errString(last.err) + ", want staging " + staging + " and target " + target
		}
		return ""
	}, stack.EndedEarly)

	file := filepath.Join(stack.DataDir(), "hostpath", node, "volumes", handle+".img") // the driver's block file
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the block volume's backing file: %v", err)
	}
	if err := os.Rename(file, file+".away"); err != nil {
		t.Fatal(err)
	}
	const missing = string(corev1.VolumeHealthInaccessible) + "/" + "DataMissing"
	waitPodHealth(t, ns, "app", "data", missing)
	waitClaimHealth(t, ns, "raw", missing)
	if err := os.Rename(file+".away", file); err != nil {
		t.Fatal(err)
	}
	waitPodHealth(t, ns, "app", "data", "")
	waitClaimHealth(t, ns, "raw", "")
}

func errString(err error) string {
	if err == nil {
		return "OK"
	}
	return err.Error()
}
