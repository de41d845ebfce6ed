package harness

import (
	"fmt"
	"os"
	"path/filepath"
)

// The node's files, from run.sh (tools/realnode/README.md lists why each
// setting is there).

func writeCNI(n *Node) error {
	dir := filepath.Join(n.Work, "net.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "10-realnode.conflist"), []byte(fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "realnode", "plugins": [
  {"type": "bridge", "bridge": "rnbr0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": %q,
            "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}
`, filepath.Join(n.Work, "cni-ipam"), n.PodCIDR)), 0o644)
}

// writeContainerd: its root, state, runc root and (netns_mounts_under_state_dir)
// the pods' network namespaces all under the work dir, so the cleanup finds
// everything there; restrict_oom_score_adj because root here lacks
// CAP_SYS_RESOURCE.
func writeContainerd(n *Node) error {
	return os.WriteFile(filepath.Join(n.Work, "containerd.toml"), []byte(fmt.Sprintf(`version = 3
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = %[2]q
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[3]q
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[4]q
        Root = "%[1]s/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%[5]q]
    conf_dir = "%[1]s/net.d"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`, n.Work, n.ContainerdSock, PauseImage, n.Bin.Path("runc"), n.Bin.Path("cni"))), 0o644)
}

// writeKubelet: cgroup v1 with cgroupfs under the run's own cgroup root;
// the kubelet's server on the node's loopback with x509 authentication by
// the cluster CA (the test reads /metrics inside the namespace).
func writeKubelet(n *Node) error {
	return os.WriteFile(filepath.Join(n.Work, "kubelet.yaml"), []byte(fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%[1]s
containerRuntimeEndpoint: unix://%[2]s
address: 127.0.0.1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[3]q}
authorization: {mode: AlwaysAllow}
podLogsDir: %[4]s/pod-logs
failSwapOn: false
evictionHard: {memory.available: "100Mi"}
imageGCHighThresholdPercent: 100
registerNode: true
volumeStatsAggPeriod: 2s
`, n.cgroupRoot, n.ContainerdSock, filepath.Join(n.DataDir, "pki", "ca.crt"), n.Work)), 0o644)
}

// writeKubeProxy: iptables mode inside the node's namespace. Every setting
// that would write a host-wide sysctl (conntrack table size) or lower an
// OOM score (root lacks CAP_SYS_RESOURCE) is off.
func writeKubeProxy(n *Node) error {
	return os.WriteFile(filepath.Join(n.Work, "kube-proxy.yaml"), []byte(fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %q}
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
mode: iptables
clusterCIDR: %s
detectLocalMode: ClusterCIDR
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, filepath.Join(n.Work, "kube-proxy.kubeconfig"), n.Name, n.IP, n.PodCIDR)), 0o644)
}
