package hostpath

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func TestFaultSpecsAreReadBackAndBadOnesRefused(t *testing.T) {
	f, err := ParseFaults("seed=7, unavailable=0.1,timeout=0.2,delay=0.3,max-delay=2s")
	if err != nil {
		t.Fatal(err)
	}
	want := Faults{Seed: 7, Unavailable: 0.1, TimedOut: 0.2, Delayed: 0.3, MaxDelay: 2 * time.Second}
	if f != want {
		t.Fatalf("parsed %+v, want %+v", f, want)
	}
	if again, err := ParseFaults(f.String()); err != nil || again != f {
		t.Errorf("String %q reads back as %+v (%v)", f.String(), again, err)
	}
	if f, err := ParseFaults(""); err != nil || f.Enabled() {
		t.Errorf("an empty spec gives %+v (%v), want no faults", f, err)
	}
	for spec, reason := range map[string]string{
		"unavailable=1.5":              "not a probability",
		"unavailable=0.6,timeout=0.6":  "more than 1",
		"delay=0.1":                    "max-delay",
		"often=0.1":                    "unknown key",
		"seed":                         "key=value",
		"timeout=x":                    "timeout",
		"unavailable=-0.1,timeout=0.5": "not a probability",
	} {
		if _, err := ParseFaults(spec); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("ParseFaults(%q) = %v, want an error about %q", spec, err, reason)
		}
	}
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.Faults = Faults{TimedOut: 2}
	if _, err := New(cfg); err == nil {
		t.Error("New accepts a fault probability of 2")
	}
}

func TestFaultDrawsSplitTheUnitIntervalInOrder(t *testing.T) {
	f := Faults{Unavailable: 0.125, TimedOut: 0.25, Delayed: 0.125}
	for u, want := range map[float64]faultKind{0: faultUnavailable, 0.1: faultUnavailable, 0.125: faultTimedOut,
		0.374: faultTimedOut, 0.375: faultDelayed, 0.499: faultDelayed, 0.5: noFault, 0.99: noFault} {
		if got := f.decide(u); got != want {
			t.Errorf("decide(%v) = %s, want %s", u, got, want)
		}
	}
	if got := (Faults{}).decide(0); got != noFault {
		t.Errorf("no faults configured, yet decide(0) = %s", got)
	}
}

// The same seed faults the same calls, whatever the order calls on
// different subjects interleave in; another seed faults others.
func TestFaultsAreReproducibleFromTheSeed(t *testing.T) {
	draws := func(seed int64, subjects ...string) map[string][]float64 {
		fi := newFaultInjector(Faults{Seed: seed})
		out := map[string][]float64{}
		for range 5 {
			for _, s := range subjects {
				u, _ := fi.draw("m", s)
				out[s] = append(out[s], u)
			}
		}
		return out
	}
	a, b, c := draws(1, "x", "y"), draws(1, "y", "x"), draws(2, "x", "y")
	for _, s := range []string{"x", "y"} {
		for i := range a[s] {
			if a[s][i] != b[s][i] {
				t.Fatalf("seed 1, subject %s, call %d: %v in one order, %v in the other", s, i, a[s][i], b[s][i])
			}
		}
	}
	if a["x"][0] == c["x"][0] && a["x"][1] == c["x"][1] {
		t.Error("seeds 1 and 2 draw the same")
	}
	if a["x"][0] == a["x"][1] {
		t.Error("two calls on one subject draw the same")
	}
}

func TestUnavailableFaultsRefuseControllerCallsWithoutDoingThem(t *testing.T) {
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.Faults = Faults{Unavailable: 1}
	r := startDriver(t, cfg)
	ctx := context.Background()
	_, err := r.controller.CreateVolume(ctx, createReq("pvc-1"))
	wantCode(t, err, codes.Unavailable)
	list := must[*csi.ListVolumesResponse](t)(r.controller.ListVolumes(ctx, &csi.ListVolumesRequest{}))
	if len(list.Entries) != 0 {
		t.Errorf("a refused CreateVolume left %d volume(s)", len(list.Entries))
	}
	if _, err := r.identity.Probe(ctx, &csi.ProbeRequest{}); err != nil {
		t.Errorf("Probe is not a faulted call, yet: %v", err)
	}
	if _, err := r.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); err != nil {
		t.Errorf("NodeGetInfo is not a faulted call, yet: %v", err)
	}
}

func TestTimedOutFaultsDoTheCallAndThenReportDeadlineExceeded(t *testing.T) {
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.Faults = Faults{TimedOut: 1}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := startDriver(t, cfg)
	ctx := context.Background()
	for range 2 {
		_, err := r.controller.CreateVolume(ctx, createReq("pvc-1"))
		wantCode(t, err, codes.DeadlineExceeded)
	}
	list := must[*csi.ListVolumesResponse](t)(r.controller.ListVolumes(ctx, &csi.ListVolumesRequest{}))
	if len(list.Entries) != 1 {
		t.Fatalf("CreateVolume retried after a timeout left %d volumes, want 1", len(list.Entries))
	}
	id := list.Entries[0].Volume.VolumeId
	_, err = r.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	wantCode(t, err, codes.DeadlineExceeded)
	list = must[*csi.ListVolumesResponse](t)(r.controller.ListVolumes(ctx, &csi.ListVolumesRequest{}))
	if len(list.Entries) != 0 {
		t.Errorf("DeleteVolume reported as timed out did not delete the volume")
	}
	if d.InjectedFaults() != 0 {
		t.Errorf("a driver that never ran counts %d faults", d.InjectedFaults())
	}
}

func TestDelayedFaultsDoTheCallLate(t *testing.T) {
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.Faults = Faults{Delayed: 1, MaxDelay: 50 * time.Millisecond}
	r := startDriver(t, cfg)
	if _, err := r.controller.CreateVolume(context.Background(), createReq("pvc-1")); err != nil {
		t.Fatalf("a delayed CreateVolume failed: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.controller.CreateVolume(ctx, createReq("pvc-2"))
	wantCode(t, err, codes.Canceled)
}

// Snapshot and group calls are faulted too: a refused one does nothing, a
// timed-out one is done, so the CO's retry finds it.
func TestSnapshotAndGroupCallsAreFaulted(t *testing.T) {
	ctx := context.Background()
	for _, f := range []Faults{{Unavailable: 1}, {TimedOut: 1}} {
		cfg := testConfig(shortTempDir(t), NewFakeMounter())
		plain := startDriver(t, cfg)
		vols := makeSourceVolumes(t, plain, "a", "b")
		plain.stop(t)
		cfg.Faults = f
		r := startDriver(t, cfg)
		want, done := codes.Unavailable, 0
		if f.TimedOut > 0 {
			want, done = codes.DeadlineExceeded, 1
		}
		_, err := r.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: vols[0]})
		wantCode(t, err, want)
		_, err = r.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: vols})
		wantCode(t, err, want)
		list := must[*csi.ListSnapshotsResponse](t)(r.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{}))
		if len(list.Entries) != 3*done {
			t.Errorf("faults %v: %d snapshots, want %d", f, len(list.Entries), 3*done)
		}
		_, err = r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: groupSnapshotIDFor("g")})
		if (err == nil) != (done == 1) {
			t.Errorf("faults %v: GetVolumeGroupSnapshot: %v", f, err)
		}
		r.stop(t)
	}
}
