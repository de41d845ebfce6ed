package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/tools/realnode/harness"
)

// makeClaim creates a claim of deploy/'s default class (node-local,
// Immediate) and deletes it at cleanup.
func makeClaim(t *testing.T, n *harness.Node, name, size string) {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	if _, err := n.Client.CoreV1().PersistentVolumeClaims("default").Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.Client.CoreV1().PersistentVolumeClaims("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// leaseHolder is the holderIdentity of the controller's Lease and the pod
// it names (client-go's identity is host_pid_time; the host is the pod).
func leaseHolder(n *harness.Node) (string, string, error) {
	l, err := n.Client.CoordinationV1().Leases("volplane").Get(context.Background(), "volplane-controller", metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", "", fmt.Errorf("Lease volplane/volplane-controller has no holder")
	}
	id := *l.Spec.HolderIdentity
	pod, _, _ := strings.Cut(id, "_")
	return id, pod, nil
}

// waitRunning waits for pod to run (its container started).
func waitRunning(t *testing.T, n *harness.Node, name string, timeout time.Duration) {
	t.Helper()
	err := harness.WaitFor(timeout, func() error {
		p, err := n.Client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s: %s", name, describe(p, nil))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\nevents:\n%s", err, kubectl(t, n, "get", "events", "-n", "default", "--sort-by=.metadata.creationTimestamp"))
	}
}

// leaderKilled is issue 26's failover scenario: a claim and its pod are
// created, and right after the controller's leader pod is deleted with
// grace period 0; the other replica takes the Lease, the claim is bound and
// the pod runs.
func leaderKilled(t *testing.T, n *harness.Node) {
	ctx := context.Background()
	id, leader, err := leaseHolder(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s (%s)", leader, id)
	began := time.Now()
	makeClaim(t, n, "realnode-failover", "32Mi")
	startPod(t, n, "realnode-failover", "sleep 600", "realnode-failover")
	if err := n.Client.CoreV1().Pods("volplane").Delete(ctx, leader, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("delete leader pod %s: %v", leader, err)
	}
	killed := time.Now()
	var newID, newLeader string
	err = harness.WaitFor(2*time.Minute, func() error {
		var err error
		newID, newLeader, err = leaseHolder(n)
		if err != nil {
			return err
		}
		if newLeader == leader {
			return fmt.Errorf("Lease still held by %s", id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	handover := time.Since(killed)
	var pvc *corev1.PersistentVolumeClaim
	err = harness.WaitFor(3*time.Minute, func() error {
		var err error
		if pvc, err = n.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "realnode-failover", metav1.GetOptions{}); err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim %s", pvc.Status.Phase)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\nevents:\n%s", err, kubectl(t, n, "get", "events", "-n", "default", "--sort-by=.metadata.creationTimestamp"))
	}
	bound := time.Since(began)
	waitRunning(t, n, "realnode-failover", 3*time.Minute)
	t.Logf("leader %s deleted (grace 0): Lease taken by %s (%s) %s later; after the claim was made: bound to %s at %s, pod running at %s",
		leader, newLeader, newID, handover.Round(10*time.Millisecond), pvc.Spec.VolumeName, bound.Round(10*time.Millisecond),
		time.Since(began).Round(10*time.Millisecond))
}

// volumeCapacity is the kubelet's kubelet_volume_stats_capacity_bytes of
// claim ("" if it reports none).
func volumeCapacity(n *harness.Node, claim string) (string, error) {
	body, err := n.KubeletMetrics()
	if err != nil {
		return "", fmt.Errorf("kubelet /metrics: %v %.300s", err, body)
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "kubelet_volume_stats_capacity_bytes{") && strings.Contains(l, `persistentvolumeclaim="`+claim+`"`) {
			f := strings.Fields(l)
			return f[len(f)-1], nil
		}
	}
	return "", nil
}

// expandUnderRunningPod grows a node-local claim while a pod runs on it:
// the claim's status capacity and the kubelet's volume stats show the new
// size, and the pod was never restarted.
func expandUnderRunningPod(t *testing.T, n *harness.Node) {
	ctx := context.Background()
	const claim = "realnode-grow"
	makeClaim(t, n, claim, "64Mi")
	startPod(t, n, claim, "sleep 600", claim)
	waitRunning(t, n, claim, 2*time.Minute)
	before, err := n.Client.CoreV1().Pods("default").Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var capacity string
	if err := harness.WaitFor(time.Minute, func() error {
		capacity, err = volumeCapacity(n, claim)
		if err == nil && capacity == "" {
			err = fmt.Errorf("no kubelet_volume_stats_capacity_bytes for %s yet", claim)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("before: kubelet_volume_stats_capacity_bytes %s", capacity)
	began := time.Now()
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"128Mi"}}}}`)
	if _, err := n.Client.CoreV1().PersistentVolumeClaims("default").Patch(ctx, claim, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := resource.MustParse("128Mi")
	var claimAt, statsAt time.Duration
	err = harness.WaitFor(3*time.Minute, func() error {
		if claimAt == 0 {
			pvc, err := n.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := pvc.Status.Capacity[corev1.ResourceStorage]; got.Cmp(want) < 0 {
				return fmt.Errorf("claim's status capacity %s, conditions %v", got.String(), pvc.Status.Conditions)
			}
			claimAt = time.Since(began)
		}
		if statsAt == 0 {
			capacity, err = volumeCapacity(n, claim)
			if err != nil {
				return err
			}
			if v, err := strconv.ParseFloat(capacity, 64); err != nil || int64(v) != want.Value() {
				return fmt.Errorf("kubelet_volume_stats_capacity_bytes %s, want %d", capacity, want.Value())
			}
			statsAt = time.Since(began)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\nevents:\n%s", err, kubectl(t, n, "get", "events", "-n", "default", "--sort-by=.metadata.creationTimestamp"))
	}
	after, err := n.Client.CoreV1().Pods("default").Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID || after.Status.Phase != corev1.PodRunning || len(after.Status.ContainerStatuses) != 1 ||
		after.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("pod restarted or replaced: %s", describe(after, nil))
	}
	t.Logf("grown 64Mi -> 128Mi under a running pod: claim's status capacity after %s, kubelet_volume_stats_capacity_bytes %s after %s",
		claimAt.Round(10*time.Millisecond), capacity, statsAt.Round(10*time.Millisecond))
}

// expectedMissing are the dashboard's metrics a scrape of deploy/ after
// this test's work lacks, with why.
var expectedMissing = map[string]string{
	"attachdetach_controller_total_volumes":   "no volume of a driver that attaches (node-local driver)",
	"storage_count_attachable_volumes_in_use": "no volume of a driver that attaches (node-local driver)",
	"volume_operation_total_errors":           "no Delete volume went Failed",
	"volplane_loop_stuck_keys":                "no key failed for 5 minutes",
	"volplane_loop_stuck_keys_total":          "no key failed for 5 minutes",
	"pv_collector_unbound_pv_count":           "no Available volume at scrape time",
	"pv_collector_unbound_pvc_count":          "no Pending claim at scrape time",
}

// dashboardMetricNames reads deploy/dashboard.json's queries (every expr
// and templating query) the way deploy.DashboardMetrics does: a metric is
// an identifier followed by `{`, or label_values' first argument.
func dashboardMetricNames(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	sel := regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)\{`)
	lv := regexp.MustCompile(`label_values\(([A-Za-z_:][A-Za-z0-9_:]*)`)
	names := map[string]bool{}
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x, k)
			}
		case []any:
			for _, x := range v {
				walk(x, key)
			}
		case string:
			if key != "expr" && key != "query" {
				return
			}
			for _, m := range sel.FindAllStringSubmatch(v, -1) {
				names[m[1]] = true
			}
			for _, m := range lv.FindAllStringSubmatch(v, -1) {
				names[m[1]] = true
			}
		}
	}
	walk(doc, "")
	var out []string
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// dashboardScrape scrapes /metrics of every controller pod (9742) and node
// pod (9743) at their pod IPs from inside the node's namespace, saves each
// scrape in the work dir, and checks every metric the dashboard reads is
// served by one of them (but expectedMissing).
func dashboardScrape(t *testing.T, n *harness.Node) {
	ctx := context.Background()
	// What the binder's pv_collector counts: a bound claim, a Pending one
	// (no consumer of the WaitForFirstConsumer class) and an Available
	// volume (static, Retain: deleting it touches no driver).
	makeClaim(t, n, "realnode-metrics", "16Mi")
	wffc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "realnode-metrics-pending", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("volplane-hostpath-wffc"),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
		},
	}
	if _, err := n.Client.CoreV1().PersistentVolumeClaims("default").Create(ctx, wffc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.Client.CoreV1().PersistentVolumeClaims("default").Delete(context.Background(), wffc.Name, metav1.DeleteOptions{})
	})
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "realnode-metrics-static"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "realnode-none",
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "hostpath.csi.volplane.io", VolumeHandle: "realnode-metrics-static"}},
		},
	}
	if _, err := n.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	err := harness.WaitFor(2*time.Minute, func() error {
		c, err := n.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "realnode-metrics", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim realnode-metrics %s", c.Status.Phase)
		}
		v, err := n.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if v.Status.Phase != corev1.VolumeAvailable {
			return fmt.Errorf("PV %s %s", pv.Name, v.Status.Phase)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := n.Client.CoreV1().Pods("volplane").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	scraped := 0
	for _, p := range pods.Items {
		port := 9742
		if strings.HasPrefix(p.Name, "volplane-node-") {
			port = 9743
		}
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		url := fmt.Sprintf("http://%s:%d/metrics", p.Status.PodIP, port)
		body, err := n.InNetns("curl", "-sS", "--fail", "--max-time", "10", url)
		if err != nil {
			t.Fatalf("scrape %s (%s): %v %.300s", p.Name, url, err, body)
		}
		file := filepath.Join(n.Work, "scrape-"+p.Name+".txt")
		_ = os.WriteFile(file, []byte(body), 0o644)
		scraped++
		for _, l := range strings.Split(body, "\n") {
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			name := l
			if i := strings.IndexAny(l, "{ "); i >= 0 {
				name = l[:i]
			}
			served[name] = true
		}
		t.Logf("scraped %s %s: %d bytes (%s)", p.Name, url, len(body), file)
	}
	if scraped < 3 {
		t.Fatalf("scraped %d pods, want both controller replicas and the node pod", scraped)
	}
	var missing, unexpected []string
	for _, m := range dashboardMetricNames(t) {
		if served[m] {
			continue
		}
		missing = append(missing, m)
		if _, ok := expectedMissing[m]; !ok {
			unexpected = append(unexpected, m)
		}
	}
	t.Logf("the dashboard's metrics missing from the scrapes: %v", missing)
	if len(unexpected) > 0 {
		t.Fatalf("the dashboard reads metrics no pod of deploy/ serves: %v", unexpected)
	}
}
