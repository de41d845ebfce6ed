package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The commands people run reject bad invocations before they dial anything.
func TestExplainRejectsBadInvocationsClearly(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "pvc"}, "accepts 2 arg(s), received 1"},
		{[]string{"explain", "pvc", "a/b", "-o", "yaml"}, `--output "yaml": want table or json`},
		{[]string{"doctor", "-o", "wide"}, `--output "wide": want table or json`},
		{[]string{"release", "pv"}, "accepts"},
	} {
		root := newRootCommand()
		root.SetArgs(tc.args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("volplane %s: error %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// Without --kubeconfig and $KUBECONFIG, the commands people run use the
// kubeconfig `volplane up` wrote, when there is one.
func TestPeoplesCommandsDefaultToTheKubeconfigOfUp(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(dataDirEnv, dir)
	t.Setenv("KUBECONFIG", "")
	if got := userKubeconfig(""); got != "" {
		t.Errorf("no up data dir: kubeconfig %q, want in-cluster (\"\")", got)
	}
	up := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(up, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := userKubeconfig(""); got != up {
		t.Errorf("kubeconfig %q, want up's %q", got, up)
	}
	if got := userKubeconfig("/elsewhere"); got != "/elsewhere" {
		t.Errorf("--kubeconfig ignored: %q", got)
	}
	t.Setenv("KUBECONFIG", "/from/env")
	if got := userKubeconfig(""); got != "" {
		t.Errorf("$KUBECONFIG set: %q, want it left to client-go (\"\")", got)
	}
}
