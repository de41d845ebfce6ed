package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// The provisioner's flags fail before anything runs, naming what is wrong.
func TestControllerProvisionerFlagsFailClearly(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("NODE_NAME", "")
	kubeconfig := unreachableKubeconfig(t)
	missing := "unix://" + filepath.Join(t.TempDir(), "csi.sock")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--controllers", "provisioner"}, "needs at least one CSI endpoint"},
		{[]string{"--controllers", "provisioner", "--csi-endpoint", "tcp://127.0.0.1:9"}, `"tcp://127.0.0.1:9"`},
		{[]string{"--controllers", "binder,provisioner", "--csi-endpoint", "unix://relative.sock"}, `"unix://relative.sock"`},
		{[]string{"--controllers", "provisioner", "--csi-endpoint", missing, "--metrics-bind-address", ""}, missing},
		// Node deployment.
		{[]string{"--node-deployment", "--controllers", "provisioner", "--csi-endpoint", missing},
			"node deployment needs the node's name (--node-name, or the NODE_NAME environment variable)"},
		{[]string{"--node-deployment", "--node-name", "node-1", "--controllers", "binder,provisioner", "--csi-endpoint", missing},
			"node deployment runs only provisioner, capacity, attacher, resizer, snapshotter and health-monitor beside a node's driver; run binder in the central controller"},
		{[]string{"--node-deployment", "--node-name", "node-1", "--controllers", "provisioner", "--csi-endpoint", missing, "--leader-elect"},
			"must not share a Lease: turn leader election off"},
		{[]string{"--node-deployment", "--node-name", "node-1", "--controllers", "provisioner", "--csi-endpoint", missing,
			"--node-deployment-base-delay", "10s", "--node-deployment-max-delay", "1s"}, "max delay 1s: want at least the base delay 10s"},
		{[]string{"--node-name", "node-1", "--controllers", "provisioner", "--csi-endpoint", missing}, "--node-name is used only with --node-deployment"},
	}
	for _, c := range cases {
		root := newRootCommand()
		root.SetArgs(append([]string{"controller", "--kubeconfig", kubeconfig}, c.args...))
		root.SetOut(io.Discard)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("volplane controller %s: error = %v, want it to say %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// With --node-deployment the node's name may come from $NODE_NAME (the
// downward API's usual spelling), and leader election is off unless asked
// for: the run gets past every check to dialing the driver.
func TestControllerNodeDeploymentTakesNodeNameFromTheEnvironment(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("NODE_NAME", "node-7")
	missing := "unix://" + filepath.Join(t.TempDir(), "csi.sock")
	root := newRootCommand()
	root.SetArgs([]string{"controller", "--kubeconfig", unreachableKubeconfig(t), "--node-deployment",
		"--controllers", "provisioner", "--csi-endpoint", missing, "--metrics-bind-address", ""})
	root.SetOut(io.Discard)
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("error = %v, want the dial of %s to fail (every check passed)", err, missing)
	}
}
