package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/volplane/volplane/bench"
)

// buildReference builds bench/cmd/<program> into a temporary directory:
// the bench runs it as a scenario's reference sidecar.
func buildReference(t *testing.T, program string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), program)
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", out, "../../bench/cmd/"+program)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", program, err, b)
	}
	return out
}

// volplane bench --scenario attach --compare, at a few pods on two nodes:
// both sides attach every volume at the roles' own limits (attach/detach
// 20/30, attacher 5/10), the writes counted per attach are those of an
// attach (a VolumeAttachment created and its status written, at least),
// and the report speaks of attaches.
func TestBenchComparesAttachWithTheReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	const pairs = 3
	attacher := buildReference(t, bench.ReferenceAttacherProgram)
	r, out := runBench(t, "--scenario", "attach", "--pairs", "3", "--nodes", "2", "--compare", "--reference-attacher", attacher)
	if r.QPS != bench.AttachDetachQPS || r.Burst != bench.AttachDetachBurst ||
		r.AttacherQPS != bench.AttacherQPS || r.AttacherBurst != bench.AttacherBurst {
		t.Errorf("limits %g/%d and %g/%d, want the reference processes' defaults", r.QPS, r.Burst, r.AttacherQPS, r.AttacherBurst)
	}
	if len(r.Sides) != 2 || r.Sides[0].Name != bench.Volplane || r.Sides[1].Name != bench.Reference {
		t.Fatalf("sides %+v, want volplane then reference", r.Sides)
	}
	for _, s := range r.Sides {
		checkSide(t, s, pairs)
		if s.WritesBy["volumeattachments POST"] != pairs || s.WritesBy["volumeattachments/status PATCH"] < pairs {
			t.Errorf("%s wrote %v, want one VolumeAttachment create and at least one status write per attach", s.Name, s.WritesBy)
		}
		if s.WritesPerBind > 10 {
			t.Errorf("%s: %.2f writes per attach, want a handful", s.Name, s.WritesPerBind)
		}
		if s.VAP50Ms <= 0 || s.VAP50Ms > s.VAP99Ms {
			t.Errorf("%s: VA seen → attached p50 %.1f ms, p99 %.1f ms", s.Name, s.VAP50Ms, s.VAP99Ms)
		}
	}
	if n := len(r.Sides[0].Processes); n != 2 {
		t.Errorf("volplane ran %v, want attachdetach and the attacher", r.Sides[0].Processes)
	}
	if p := r.Sides[1].Processes; len(p) != 1 || !strings.HasPrefix(p[0], bench.ReferenceAttacherProgram) {
		t.Errorf("the reference ran %v, want %s alone (its attach/detach controller runs in the control plane)", p, bench.ReferenceAttacherProgram)
	}
	if r.Ceiling == nil || r.Ceiling.WritesPerSec <= 0 {
		t.Errorf("no ceiling measured: %+v", r.Ceiling)
	}
	for _, want := range []string{"attaches/s", "API writes per attach", "VA seen → attached", "attacher QPS 5, burst 10"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// --nodes belongs to the attach scenario: elsewhere it is refused before
// anything starts.
func TestBenchRefusesNodesOutsideAttach(t *testing.T) {
	out, err := volplane(t, "bench", "--scenario", "static", "--nodes", "3").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--nodes is only for --scenario attach") {
		t.Errorf("volplane bench --scenario static --nodes 3: %v\n%s", err, out)
	}
}
