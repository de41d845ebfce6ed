package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Short Lease timings so that a takeover takes seconds, not 15 s.
const (
	testLease       = 4 * time.Second
	testRenew       = 3 * time.Second
	testRetry       = 500 * time.Millisecond
	testLeaseName   = "volplane-le-test"
	testLeaseNSName = "kube-system"
)

// Two `volplane controller` replicas against one API server: one leads and
// binds, the other stands by (ready, volplane_leading 0); a SIGKILLed leader is replaced within
// about a lease duration and the new leader binds; SIGTERM makes a leader
// exit cleanly and clear the Lease at once.
func TestControllerReplicasElectOneLeaderAndHandOver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp := controlPlane(t)
	client := cp.Client
	replicas := map[int]*controllerProcess{}
	for range 2 {
		p := startController(t, cp.Kubeconfig)
		replicas[p.cmd.Process.Pid] = p
	}
	leader := replicas[waitLeaseHolder(t, client, func(pid int) bool { return replicas[pid] != nil })]
	var follower *controllerProcess
	for _, p := range replicas {
		if p != leader {
			follower = p
		}
	}
	createStaticPair(t, client, "before")
	waitBoundClaim(t, client, "before")
	// Both are ready (a standby is ready to take over, so a Deployment's
	// rolling update can proceed); volplane_leading says which one leads.
	for _, p := range []*controllerProcess{leader, follower} {
		if status := httpStatus(t, p.url+"/readyz"); status != http.StatusOK {
			t.Errorf("a replica answers /readyz with %d, want 200", status)
		}
	}
	if !strings.Contains(httpGetBody(t, follower.url+"/metrics"), "\nvolplane_leading 0\n") {
		t.Error("the replica without the Lease does not report volplane_leading 0")
	}
	if !strings.Contains(httpGetBody(t, leader.url+"/metrics"), "\nvolplane_leading 1\n") {
		t.Error("the leader does not report volplane_leading 1")
	}

	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	createStaticPair(t, client, "after")
	waitLeaseHolder(t, client, func(pid int) bool { return pid == follower.cmd.Process.Pid })
	took := time.Since(killed)
	t.Logf("the follower took over %.1fs after the leader was killed (lease duration %s)", took.Seconds(), testLease)
	if took > testLease+4*testRetry+2*time.Second {
		t.Errorf("takeover took %s, want about the lease duration %s", took, testLease)
	}
	waitBoundClaim(t, client, "after")

	if err := follower.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-follower.done:
		if err != nil {
			t.Fatalf("the leader did not exit cleanly on SIGTERM: %v\n%s", err, follower.output)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the leader still runs 30s after SIGTERM\n%s", follower.output)
	}
	lease, err := client.CoordinationV1().Leases(testLeaseNSName).Get(ctx, testLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the Lease is still held by %q after its holder stopped", *h)
	}
}

// controllerProcess is a running `volplane controller` child.
type controllerProcess struct {
	cmd    *exec.Cmd
	output *strings.Builder
	url    string // of /metrics, /healthz and /readyz
	done   chan error
}

func startController(t *testing.T, kubeconfig string) *controllerProcess {
	t.Helper()
	return runController(t, os.Stderr, "--kubeconfig", kubeconfig, "--controllers", "binder",
		"--metrics-bind-address", "127.0.0.1:0", "--leader-elect-name", testLeaseName,
		"--leader-elect-lease-duration", testLease.String(), "--leader-elect-renew-deadline", testRenew.String(),
		"--leader-elect-retry-period", testRetry.String())
}

// runController starts `volplane controller args...` (which must serve
// metrics) with its log on stderr, and returns once it says where.
func runController(t *testing.T, stderr io.Writer, args ...string) *controllerProcess {
	t.Helper()
	cmd := volplane(t, append([]string{"controller"}, args...)...)
	cmd.Env = append(cmd.Env, "KUBECONFIG=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &controllerProcess{cmd: cmd, output: &strings.Builder{}, done: make(chan error, 1)}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	serving := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			line := scanner.Text()
			p.output.WriteString(line + "\n")
			if _, url, ok := strings.Cut(line, " on "); ok && strings.HasPrefix(line, "Serving /metrics") {
				serving <- url
			}
		}
		p.done <- cmd.Wait()
	}()
	select {
	case p.url = <-serving:
		return p
	case err := <-p.done:
		t.Fatalf("volplane controller exited at start: %v\n%s", err, p.output)
	case <-time.After(time.Minute):
		t.Fatal("volplane controller never said where it serves /metrics")
	}
	return nil
}

// waitLeaseHolder waits until the Lease names a holder whose pid is wanted,
// and returns that pid. Identities are host_pid_nanos (manager.runElected).
func waitLeaseHolder(t *testing.T, client kubernetes.Interface, want func(pid int) bool) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	last := "none"
	for time.Now().Before(deadline) {
		lease, err := client.CoordinationV1().Leases(testLeaseNSName).Get(context.Background(), testLeaseName, metav1.GetOptions{})
		if err == nil && lease.Spec.HolderIdentity != nil {
			last = *lease.Spec.HolderIdentity
			if pid := identityPid(last); pid > 0 && want(pid) {
				return pid
			}
		}
		time.Sleep(testRetry / 5)
	}
	t.Fatalf("Lease %s/%s never held by the wanted replica; last holder %s", testLeaseNSName, testLeaseName, last)
	return 0
}

func identityPid(id string) int {
	parts := strings.Split(id, "_")
	if len(parts) < 3 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[len(parts)-2])
	return pid
}

// createStaticPair creates a PV and a claim that only match each other
// (their own class name), in the default namespace.
func createStaticPair(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	class := "le-" + name
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name}, Spec: corev1.PersistentVolumeSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: size, StorageClassName: class,
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
	}}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class,
		Resources: corev1.VolumeResourceRequirements{Requests: size},
	}}
	if _, err := client.CoreV1().PersistentVolumeClaims(metav1.NamespaceDefault).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitBoundClaim(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		c, err := client.CoreV1().PersistentVolumeClaims(metav1.NamespaceDefault).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && c.Status.Phase == corev1.ClaimBound && c.Spec.VolumeName == "pv-"+name {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("claim default/%s not bound to pv-%s", name, name)
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
