package realnode

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/tools/realnode/harness"
)

// TestRealNode joins a real kubelet, containerd and kube-proxy, built from
// their Go modules, to `volplane up --control-plane-only` inside a network
// namespace, and proves a pod reaches the API server through the
// `kubernetes` Service (kube-proxy's DNAT to the advertised address, the
// relay to 127.0.0.1). Needs root, iptables, util-linux's nsenter and
// Debian's busybox-static; run it alone:
//
//	cd tools/realnode && go test -run TestRealNode -timeout 60m -v .
func TestRealNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, mounts, cgroups")
	}
	began := time.Now()
	n := harness.Start(t)
	for _, s := range n.Steps {
		t.Logf("step %-40s %s", s.Name, s.Took)
	}
	t.Logf("node %s Ready %s after the test began", n.Name, time.Since(began).Round(time.Second))

	t.Run("PodReachesTheKubernetesService", func(t *testing.T) {
		began := time.Now()
		script := `echo "service $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; nc -z -w 10 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" && echo reached`
		pod := runToCompletion(t, n, "realnode-service", script)
		log := n.PodLog("default", pod.Name, "c")
		if pod.Status.Phase != corev1.PodSucceeded || !strings.Contains(log, "reached") {
			t.Fatalf("pod %s: phase %s, log:\n%s", pod.Name, pod.Status.Phase, log)
		}
		if !strings.Contains(log, "service 10.0.0.1:443") {
			t.Errorf("pod saw the kubernetes Service as %q, want 10.0.0.1:443", log)
		}
		t.Logf("pod reached the kubernetes Service in %s:\n%s", time.Since(began).Round(10*time.Millisecond), log)
	})
}

// runToCompletion runs script in a busybox pod on the node and returns the
// pod once it has finished.
func runToCompletion(t *testing.T, n *harness.Node, name, script string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      n.Name,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "c", Image: harness.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sh", "-c", script}}},
		},
	}
	if _, err := n.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.Client.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	var got *corev1.Pod
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := n.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			got = p
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not finished after 2m: %v", name, describe(p, err))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return got
}

func describe(p *corev1.Pod, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("phase %s %v", p.Status.Phase, p.Status.ContainerStatuses)
}
