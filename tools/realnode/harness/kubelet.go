package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// startKubelet joins the node with its own client certificate
// (CN system:node:NAME, O system:nodes: the Node authorizer and the
// NodeRestriction admission plugin hold it to its own Node), talking to the
// API server at the advertised address through the relay. Its root dir and
// cert dir are the defaults (/var/lib/kubelet, /var/lib/kubelet/pki), the
// paths deploy/ mounts.
func (n *Node) startKubelet(t *testing.T) {
	began := time.Now()
	id, err := issueClient(filepath.Join(n.DataDir, "pki"), filepath.Join(n.Work, "kubelet"), "system:node:"+n.Name, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(n.Work, "kubelet.kubeconfig")
	if err := kubeconfig(kc, n.APIServer(t), filepath.Join(n.DataDir, "pki", "ca.crt"), id); err != nil {
		t.Fatal(err)
	}
	if err := writeKubelet(n); err != nil {
		t.Fatal(err)
	}
	p, err := start(n.Work, n.Netns, "kubelet", n.Bin.Path("kubelet"), "--config", filepath.Join(n.Work, "kubelet.yaml"),
		"--kubeconfig", kc, "--hostname-override", n.Name, "--node-ip", n.IP, "--v=2")
	if err != nil {
		t.Fatal(err)
	}
	n.kubelet = p
	t.Cleanup(func() {
		p.Stop(30 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
	})
	// Runs before the kubelet stops: it tears its pods down itself.
	t.Cleanup(func() { n.drain(t) })
	n.waitNodeReady(t, p)
	n.step("kubelet: Node Ready", began)
}

// drain deletes every pod on the node and waits, up to a minute, for the
// kubelet to have torn them down (what is left then is the sweep's).
func (n *Node) drain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sel := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()}
	pods, err := n.Client.CoreV1().Pods("").List(ctx, sel)
	if err != nil {
		t.Errorf("drain: %v", err)
		return
	}
	for _, p := range pods.Items {
		_ = n.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	}
	err = WaitFor(time.Minute, func() error {
		pods, err := n.Client.CoreV1().Pods("").List(ctx, sel)
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pod(s) still on %s", len(pods.Items), n.Name)
		}
		return nil
	})
	if err != nil {
		t.Logf("drain: %v", err)
	}
}

// startKubeProxy runs kube-proxy in iptables mode in the node's namespace
// with its own certificate (CN system:kube-proxy, which the bootstrap
// ClusterRoleBinding system:node-proxier names), and waits until its rules
// send the `kubernetes` Service to the advertised address.
func (n *Node) startKubeProxy(t *testing.T) {
	began := time.Now()
	id, err := issueClient(filepath.Join(n.DataDir, "pki"), filepath.Join(n.Work, "kube-proxy"), "system:kube-proxy")
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig(filepath.Join(n.Work, "kube-proxy.kubeconfig"), n.APIServer(t), filepath.Join(n.DataDir, "pki", "ca.crt"), id); err != nil {
		t.Fatal(err)
	}
	if err := writeKubeProxy(n); err != nil {
		t.Fatal(err)
	}
	p, err := start(n.Work, n.Netns, "kube-proxy", n.Bin.Path("kube-proxy"), "--config", filepath.Join(n.Work, "kube-proxy.yaml"), "--v=2")
	if err != nil {
		t.Fatal(err)
	}
	n.kpx = p
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	want := fmt.Sprintf("%s:%d", n.IP, n.apiPort(t))
	err = WaitFor(2*time.Minute, func() error {
		if done, err := p.Exited(); done {
			t.Fatalf("kube-proxy exited: %v\n%s", err, p.Tail(30))
		}
		out, err := runErr("ip", "netns", "exec", n.Netns, "iptables-save", "-t", "nat")
		if err != nil {
			return fmt.Errorf("iptables-save: %v %s", err, out)
		}
		if !strings.Contains(out, "--to-destination "+want) {
			return fmt.Errorf("no DNAT to %s yet", want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("kube-proxy: %v\n%s", err, p.Tail(30))
	}
	n.step("kube-proxy: kubernetes Service rules", began)
}

// PodLog reads a container's log from the kubelet's pod log dir (the API
// server cannot reach the kubelet inside the namespace, so no kubectl logs).
func (n *Node) PodLog(namespace, pod, container string) string {
	matches, _ := filepath.Glob(filepath.Join(n.Work, "pod-logs", namespace+"_"+pod+"_*", container, "*.log"))
	var all strings.Builder
	for _, m := range matches {
		b, _ := os.ReadFile(m)
		all.Write(b)
	}
	return all.String()
}

// KubeletMetrics reads the kubelet's /metrics inside the node's namespace
// (where it listens) with the admin client certificate of `up`.
func (n *Node) KubeletMetrics() (string, error) {
	pki := filepath.Join(n.DataDir, "pki")
	// -k: the kubelet serves a self-signed certificate of its own (no
	// serving certificate was issued to it); only the client is checked.
	return runErr("ip", "netns", "exec", n.Netns, "curl", "-sS", "--fail", "-k",
		"--cert", filepath.Join(pki, "admin.crt"), "--key", filepath.Join(pki, "admin.key"), "https://127.0.0.1:10250/metrics")
}

// InNetns runs a command inside the node's network namespace (where the
// pod IPs are routed) and returns its output.
func (n *Node) InNetns(args ...string) (string, error) {
	return runErr(append([]string{"ip", "netns", "exec", n.Netns}, args...)...)
}
