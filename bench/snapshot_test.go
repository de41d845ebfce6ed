package bench

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The snapshot scenario is offered and validates like the others: it needs
// no --rate, and its limits follow the same rules.
func TestSnapshotScenarioValidates(t *testing.T) {
	if !slices.Contains(Scenarios(), Snapshot) {
		t.Fatalf("Scenarios() = %v lacks %q", Scenarios(), Snapshot)
	}
	ok := Options{Scenario: Snapshot, Pairs: 1, QPS: SnapshotterQPS, Burst: SnapshotterBurst, Timeout: time.Minute, Executable: "/bin/volplane"}
	if err := ok.Validate(); err != nil {
		t.Errorf("snapshot at the reference's limits: %v", err)
	}
	unthrottled := ok
	unthrottled.QPS, unthrottled.Burst = 0, 0
	if err := unthrottled.Validate(); err != nil {
		t.Errorf("snapshot unthrottled: %v", err)
	}
	for name, mutate := range map[string]func(*Options){
		"no pairs":          func(o *Options) { o.Pairs = 0 },
		"qps with no burst": func(o *Options) { o.Burst = 0 },
		"negative workers":  func(o *Options) { o.Workers = -1 },
		"no timeout":        func(o *Options) { o.Timeout = 0 },
	} {
		o := ok
		mutate(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: validated, want an error", name)
		}
	}
	if !needsDrivers(Snapshot) || needsDrivers(Static) {
		t.Error("the snapshot scenario runs the bundled drivers, static does not")
	}
	if SnapshotterQPS != 5 || SnapshotterBurst != 10 {
		t.Errorf("reference limits %d/%d, want external-snapshotter's defaults 5/10", SnapshotterQPS, SnapshotterBurst)
	}
}

// Writes to the snapshot API count with the PV and claim writes; reads and
// other resources do not.
func TestAPIWritesCountSnapshotResources(t *testing.T) {
	raw := `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",group="snapshot.storage.k8s.io",resource="volumesnapshotcontents",verb="POST"} 3
apiserver_request_total{code="200",group="snapshot.storage.k8s.io",resource="volumesnapshots",subresource="status",verb="PUT"} 4
apiserver_request_total{code="200",group="snapshot.storage.k8s.io",resource="volumesnapshots",verb="PATCH"} 1
apiserver_request_total{code="200",group="snapshot.storage.k8s.io",resource="volumesnapshots",verb="LIST"} 50
apiserver_request_total{code="200",group="",resource="persistentvolumeclaims",verb="PUT"} 2
apiserver_request_total{code="201",group="",resource="events",verb="POST"} 7
apiserver_request_total{code="201",group="",resource="configmaps",verb="POST"} 9
`
	w, err := parseAPIWrites([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if w.Volumes != 10 || w.Events != 7 {
		t.Errorf("got %+v, want 10 volume and snapshot writes, 7 events", w)
	}
	if got := w.By["volumesnapshots/status PUT"]; got != 4 || len(w.By) != 5 {
		t.Errorf("by kind %v, want 5 kinds, 4 snapshot status PUTs", w.By)
	}
}

// The printed report of the snapshot scenario speaks of snapshots; the
// others keep their words.
func TestSnapshotReportWording(t *testing.T) {
	side := Side{Name: Volplane, Bound: 2, Complete: true, Seconds: 1, BindsPerSec: 2, Writes: 8, WritesPerBind: 4, CPUSeconds: 0.1, CPUMsPerBind: 50,
		WritesBy: map[string]int64{"volumesnapshots/status PUT": 4, "volumesnapshotcontents POST": 2}}
	r := Report{Scenario: Snapshot, Pairs: 2, QPS: 5, Burst: 10, Workers: 10, Sides: []Side{side, {Name: Reference, Bound: 2, Complete: true, Seconds: 2, BindsPerSec: 1, WritesPerBind: 12}},
		Ceiling: &Ceiling{Writes: 6, Seconds: 0.1, WritesPerSec: 60}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"writes per snapshot by kind", "snapshots ready", "snapshots/s", "API writes per snapshot", "CPU per snapshot", "snapshots/s possible", "time to ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("snapshot report lacks %q:\n%s", want, out)
		}
	}
	for _, gone := range []string{"bind", "Bound", "claims"} {
		if strings.Contains(out, gone) {
			t.Errorf("snapshot report still says %q:\n%s", gone, out)
		}
	}
	if !regexp.MustCompile(`volumesnapshots/status PUT\s+2\.00`).MatchString(out) {
		t.Errorf("breakdown lacks 2 snapshot status PUTs per snapshot:\n%s", out)
	}
	r.Scenario = Static
	b.Reset()
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "binds/s") {
		t.Errorf("static report lost its wording:\n%s", b.String())
	}
}
