package main

import (
	"strings"
	"testing"

	"github.com/volplane/volplane/bench"
)

// The reference snapshot processes default to external-snapshotter's own
// limits and refuse to start without what they need.
func TestBenchReferenceSnapshotFlags(t *testing.T) {
	for _, cmd := range newBenchReferenceSnapshotCommands() {
		if !cmd.Hidden {
			t.Errorf("%s is not hidden", cmd.Name())
		}
		for flag, want := range map[string]string{"kube-api-qps": "5", "kube-api-burst": "10", "kubeconfig": ""} {
			if got := cmd.Flags().Lookup(flag).DefValue; got != want {
				t.Errorf("%s --%s defaults to %q, want %q", cmd.Name(), flag, got, want)
			}
		}
		cmd.SetArgs(nil)
		cmd.SetOut(new(strings.Builder))
		cmd.SetErr(new(strings.Builder))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
			t.Errorf("%s without --kubeconfig: %v, want an error naming it", cmd.Name(), err)
		}
	}
	sidecar := newBenchReferenceSnapshotCommands()[1]
	sidecar.SetArgs([]string{"--kubeconfig", "/nonexistent"})
	sidecar.SetOut(new(strings.Builder))
	sidecar.SetErr(new(strings.Builder))
	if err := sidecar.Execute(); err == nil || !strings.Contains(err.Error(), "csi-address") {
		t.Errorf("csi-snapshotter without --csi-address: %v, want an error naming it", err)
	}
}

// volplane bench --scenario snapshot --compare, at a few pairs: both sides
// make every snapshot ready at the reference's default limits, the API
// server's ceiling for the same writes is measured, and the report speaks of
// snapshots.
func TestBenchComparesSnapshotsWithTheReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	const pairs = 3
	r, out := runBench(t, "--scenario", "snapshot", "--pairs", "3", "--compare")
	if r.QPS != bench.SnapshotterQPS || r.Burst != bench.SnapshotterBurst {
		t.Errorf("limits %g/%d, want the reference's defaults %d/%d", r.QPS, r.Burst, bench.SnapshotterQPS, bench.SnapshotterBurst)
	}
	if len(r.Sides) != 2 || r.Sides[0].Name != bench.Volplane || r.Sides[1].Name != bench.Reference {
		t.Fatalf("sides %+v, want volplane then reference", r.Sides)
	}
	for _, s := range r.Sides {
		checkSide(t, s, pairs)
		if len(s.Processes) != 2 {
			t.Errorf("%s ran %v, want the two snapshot roles", s.Name, s.Processes)
		}
	}
	if r.Ceiling == nil || r.Ceiling.WritesPerSec <= 0 {
		t.Errorf("no ceiling measured: %+v", r.Ceiling)
	}
	for _, want := range []string{"snapshots/s", "API writes per snapshot", "reference-csi-snapshotter"} {
		if !strings.Contains(out, want) && !strings.Contains(strings.Join(r.Sides[1].Processes, " "), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
