package realnode

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
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
		// Plain HTTP to the TLS port: only Go's HTTPS server (the API
		// server's) answers this sentence, so the pod reached it.
		script := `echo "service $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; (printf 'GET /version HTTP/1.0\r\n\r\n'; sleep 5) | nc -w 10 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT"`
		pod := runToCompletion(t, n, "realnode-service", script)
		log := n.PodLog("default", pod.Name, "c")
		if pod.Status.Phase != corev1.PodSucceeded || !strings.Contains(log, "Client sent an HTTP request to an HTTPS server") {
			t.Fatalf("pod %s: phase %s, log:\n%s", pod.Name, pod.Status.Phase, log)
		}
		if !strings.Contains(log, "service 10.0.0.1:443") {
			t.Errorf("pod saw the kubernetes Service as %q, want 10.0.0.1:443", log)
		}
		t.Logf("pod reached the kubernetes Service in %s:\n%s", time.Since(began).Round(10*time.Millisecond), log)
	})

	t.Run("Deploy", func(t *testing.T) {
		r := applyDeploy(t, n)
		for _, s := range []struct {
			name string
			run  func(*testing.T, *harness.Node)
		}{
			{"NodeLocalClaim", nodeLocalClaim},
			{"LeaderKilled", leaderKilled},
			{"ExpandUnderRunningPod", expandUnderRunningPod},
			{"DashboardMetrics", dashboardScrape},
			{"AttachDetach", attachDetach},
		} {
			began := time.Now()
			ok := t.Run(s.name, func(t *testing.T) { s.run(t, n) })
			t.Logf("%s: ok=%v in %s", s.name, ok, time.Since(began).Round(10*time.Millisecond))
		}
		r.uninstallAndHelm(t, n)
	})
}

// nodeLocalClaim is issue 26's first scenario on deploy/: a claim of the
// default (node-local, Immediate) class, provisioned by the node
// DaemonSet's provisioner; a pod writes a file through the kubelet's mount
// of the driver's volume and is deleted; a second pod reads the file.
func nodeLocalClaim(t *testing.T, n *harness.Node) {
	ctx := context.Background()
	began := time.Now()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "realnode-local", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}
	if _, err := n.Client.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.Client.CoreV1().PersistentVolumeClaims("default").Delete(context.Background(), claim.Name, metav1.DeleteOptions{})
	})
	w := runToCompletion(t, n, "realnode-writer", "echo written-by-the-first-pod > /data/hello && df /data", claim.Name)
	if w.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("writer: phase %s, log:\n%s", w.Status.Phase, n.PodLog("default", w.Name, "c"))
	}
	t.Logf("writer done %s after the claim was made:\n%s\nevents:\n%s", time.Since(began).Round(10*time.Millisecond),
		n.PodLog("default", w.Name, "c"), kubectl(t, n, "get", "events", "-n", "default", "--sort-by=.metadata.creationTimestamp",
			"-o", "custom-columns=TIME:.metadata.creationTimestamp,FIRST:.firstTimestamp,OBJECT:.involvedObject.name,REASON:.reason,FROM:.source.component,MESSAGE:.message"))
	if err := n.Client.CoreV1().Pods("default").Delete(ctx, w.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The reader stays up so that the kubelet reports the volume's stats
	// (NodeGetVolumeStats through deploy/'s driver).
	r := startPod(t, n, "realnode-reader", "cat /data/hello && sleep 600", claim.Name)
	err := harness.WaitFor(2*time.Minute, func() error {
		if log := n.PodLog("default", r.Name, "c"); !strings.Contains(log, "written-by-the-first-pod") {
			return fmt.Errorf("reader's log: %q", log)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var stats []string
	err = harness.WaitFor(time.Minute, func() error {
		body, err := n.KubeletMetrics()
		if err != nil {
			return fmt.Errorf("kubelet /metrics: %v %.300s", err, body)
		}
		stats = nil
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "kubelet_volume_stats_") && strings.Contains(l, `persistentvolumeclaim="`+claim.Name+`"`) {
				stats = append(stats, l)
			}
		}
		if !strings.Contains(strings.Join(stats, "\n"), "kubelet_volume_stats_capacity_bytes") {
			return fmt.Errorf("no kubelet_volume_stats_capacity_bytes for %s yet", claim.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the kubelet's stats of the volume:\n%s", strings.Join(stats, "\n"))
	pvc, err := n.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node-local claim %s (PV %s): written by one pod, read by the next, %s in all", claim.Name, pvc.Spec.VolumeName,
		time.Since(began).Round(10*time.Millisecond))

	// Reclaim (Delete): the node's provisioner deletes the volume once the
	// pods and the claim are gone.
	began = time.Now()
	for _, p := range []string{w.Name, r.Name} {
		_ = n.Client.CoreV1().Pods("default").Delete(ctx, p, metav1.DeleteOptions{})
	}
	if err := n.Client.CoreV1().PersistentVolumeClaims("default").Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = harness.WaitFor(2*time.Minute, func() error {
		_, err := n.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("PV %s still there (%v)", pvc.Spec.VolumeName, err)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("claim deleted, PV %s reclaimed in %s", pvc.Spec.VolumeName, time.Since(began).Round(10*time.Millisecond))
}

// runToCompletion runs script in a busybox pod on the node and returns the
// pod once it has finished.
func runToCompletion(t *testing.T, n *harness.Node, name, script string, claim ...string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	startPod(t, n, name, script, claim...)
	var got *corev1.Pod
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := n.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			got = p
			break
		}
		if time.Now().After(deadline) {
			events, _ := n.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
			var msgs []string
			if events != nil {
				for _, e := range events.Items {
					msgs = append(msgs, e.Reason+": "+e.Message)
				}
			}
			t.Fatalf("pod %s not finished after 2m: %v\nevents:\n%s", name, describe(p, err), strings.Join(msgs, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return got
}

// startPod creates a busybox pod running script on the node, with claim
// mounted at /data if given, and deletes it at cleanup.
func startPod(t *testing.T, n *harness.Node, name, script string, claim ...string) *corev1.Pod {
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
	for _, c := range claim {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
	if _, err := n.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Gone before deploy/ is deleted: the kubelet unmounts the volume
	// through the driver, which must still run.
	t.Cleanup(func() {
		ctx := context.Background()
		_ = n.Client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{})
		err := harness.WaitFor(time.Minute, func() error {
			_, err := n.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("pod %s not gone (%v)", name, err)
		})
		if err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	return pod
}

func describe(p *corev1.Pod, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("phase %s %v", p.Status.Phase, p.Status.ContainerStatuses)
}
