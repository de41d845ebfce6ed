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
