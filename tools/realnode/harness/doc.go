// Package harness starts a real node on this machine for tests (issue 26):
// `volplane up --control-plane-only`, a network namespace with the node's
// address, a relay from that address to the API server on 127.0.0.1,
// containerd 2.x + runc with the CNI bridge, a kubelet and kube-proxy built
// from k8s.io/kubernetes at the version volplane embeds, each with its own
// client certificate. Every step registers its undoing with t.Cleanup, and
// the first cleanup registered (so the last to run) fails the test if a
// process, mount, network namespace, cgroup or changed sysctl is left.
//
// It drives upstream binaries only (built by ../build.sh into BIN); volplane
// never imports this module.
package harness
