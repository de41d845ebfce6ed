package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDoctorFindingsExitWithTheirOwnCode(t *testing.T) {
	if got := exitCode(&exitError{code: exitFindings, err: errors.New("found")}); got != 3 {
		t.Errorf("findings: exit %d, want 3", got)
	}
	if got := exitCode(errors.New("cannot list")); got != 1 {
		t.Errorf("error: exit %d, want 1", got)
	}
}

func TestDoctorDefaultsToTheControllerSocketsOfUp(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kubeconfig", "csi/node-1.sock", "csi/network.sock", "csi/network/node-1.sock"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, why := upEndpoints(filepath.Join(dir, "kubeconfig"))
	want := []string{"unix://" + dir + "/csi/network.sock", "unix://" + dir + "/csi/node-1.sock"}
	if !slices.Equal(got, want) || why != "" {
		t.Errorf("got %v (%q), want %v", got, why, want)
	}
	if got, why := upEndpoints(filepath.Join(t.TempDir(), "kubeconfig")); got != nil || why == "" {
		t.Errorf("another cluster's kubeconfig: got %v (%q), want none and why", got, why)
	}
}

func TestDoctorHelpStatesTheExitCodes(t *testing.T) {
	long := newDoctorCommand().Long
	for _, want := range []string{"0 no problems (information findings do not count)", "3 problems\nfound", "1 doctor could not check", "--attachment-grace"} {
		if !strings.Contains(long, want) {
			t.Errorf("doctor --help says nothing of %q", want)
		}
	}
	if f := newDoctorCommand().Flags().Lookup("attachment-grace"); f == nil || f.DefValue != "6m0s" {
		t.Errorf("--attachment-grace: %+v", f)
	}
}

func TestReleaseTakesOneClaimToPreBindTo(t *testing.T) {
	cmd := newReleaseCommand()
	if f := cmd.Flags().Lookup("to"); f == nil {
		t.Fatal("no --to")
	}
	cmd.SetArgs([]string{"pv", "old", "--to", "no-namespace"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "want NAMESPACE/NAME") {
		t.Errorf("--to no-namespace: %v", err)
	}
}
