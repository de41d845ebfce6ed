package bench

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The attach scenario is offered; --nodes belongs to it alone, and its
// reference needs the reference attacher's binary.
func TestAttachScenarioValidates(t *testing.T) {
	if !slices.Contains(Scenarios(), Attach) || !needsDrivers(Attach) {
		t.Fatalf("Scenarios() = %v: want attach, running the bundled drivers", Scenarios())
	}
	ok := Options{Scenario: Attach, Pairs: 1, Nodes: 2, QPS: AttachDetachQPS, Burst: AttachDetachBurst,
		AttacherQPS: AttacherQPS, AttacherBurst: AttacherBurst, Timeout: time.Minute, Executable: "/bin/volplane"}
	if err := ok.Validate(); err != nil {
		t.Errorf("attach at the reference limits: %v", err)
	}
	for name, mutate := range map[string]func(*Options){
		"nodes elsewhere":               func(o *Options) { o.Scenario = Static },
		"negative nodes":                func(o *Options) { o.Nodes = -1 },
		"attacher qps with no burst":    func(o *Options) { o.AttacherBurst = 0 },
		"compare without the reference": func(o *Options) { o.Compare = true },
	} {
		o := ok
		mutate(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: validated, want an error", name)
		}
	}
	withReference := ok
	withReference.Compare, withReference.ReferenceAttacher = true, "/bin/volplane-reference-attacher"
	if err := withReference.Validate(); err != nil {
		t.Errorf("compare with the reference attacher: %v", err)
	}
	if n := (Options{Scenario: Attach}).AttachNodes(); n != DefaultAttachNodes {
		t.Errorf("attach nodes by default %d, want %d", n, DefaultAttachNodes)
	}
	if n := (Options{Scenario: Static}).AttachNodes(); n != 1 {
		t.Errorf("static runs %d nodes, want 1", n)
	}
}

// Pod i goes to node i mod M and uses claim i.
func TestAttachPodsArePlacedRoundRobin(t *testing.T) {
	p := attachPod(7, "node-2")
	if p.Spec.NodeName != "node-2" || p.Name != attachPodName(7) || p.Namespace != benchNS {
		t.Errorf("pod %s/%s on %q", p.Namespace, p.Name, p.Spec.NodeName)
	}
	if v := p.Spec.Volumes; len(v) != 1 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != claimName(7) {
		t.Errorf("volumes %+v, want claim %s", v, claimName(7))
	}
}

// VolumeAttachment writes and the attach/detach controllers' node status
// patches count; the simulated nodes' status updates (PUT) and node spec
// writes do not.
func TestAPIWritesCountAttachResources(t *testing.T) {
	raw := `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",group="storage.k8s.io",resource="volumeattachments",verb="POST"} 3
apiserver_request_total{code="200",group="storage.k8s.io",resource="volumeattachments",subresource="status",verb="PATCH"} 3
apiserver_request_total{code="200",group="",resource="nodes",subresource="status",verb="PATCH"} 2
apiserver_request_total{code="200",group="",resource="nodes",subresource="status",verb="PUT"} 20
apiserver_request_total{code="200",group="",resource="nodes",verb="PUT"} 4
apiserver_request_total{code="200",group="",resource="persistentvolumes",verb="PATCH"} 3
`
	w, err := parseAPIWrites([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if w.Volumes != 11 {
		t.Errorf("got %+v, want 11 writes (3 creates, 3 status, 2 node status patches, 3 PV patches)", w)
	}
	if w.By["nodes/status PUT"] != 0 || w.By["nodes/status PATCH"] != 2 {
		t.Errorf("by kind %v: want node status patches only", w.By)
	}
}

// Only volumes whose VolumeAttachment was seen get a seen → attached time.
func TestSinceSeen(t *testing.T) {
	t0 := time.Unix(1000, 0)
	attached := map[string]time.Time{"a": t0.Add(3 * time.Second), "b": t0.Add(time.Second)}
	seen := map[string]time.Time{"a": t0.Add(time.Second)}
	if got := sinceSeen(attached, seen); len(got) != 1 || got[0] != 2*time.Second {
		t.Errorf("sinceSeen = %v, want [2s]", got)
	}
}

// The attach report speaks of attaches, gives both roles' limits and the
// VolumeAttachment percentiles, aligned.
func TestAttachReportWording(t *testing.T) {
	side := Side{Name: Volplane, Bound: 2, Complete: true, Seconds: 1, BindsPerSec: 2, Writes: 10, WritesPerBind: 5,
		CPUSeconds: 0.1, CPUMsPerBind: 50, VAP50Ms: 12, VAP90Ms: 20, VAP99Ms: 30,
		WritesBy: map[string]int64{"volumeattachments POST": 2},
		Measured: []ProcessFigures{{Name: "volplane attachdetach", CPUSeconds: 0.04, PeakRSSBytes: 1 << 20}, {Name: "volplane attacher", CPUSeconds: 0.06, PeakRSSBytes: 1 << 20}}}
	r := Report{Scenario: Attach, Pairs: 2, QPS: 20, Burst: 30, AttacherQPS: 5, AttacherBurst: 10, Workers: 16,
		Sides:   []Side{side, {Name: Reference, Bound: 2, Complete: true, Seconds: 2, BindsPerSec: 1, WritesPerBind: 6, VAP50Ms: 24}},
		Ceiling: &Ceiling{Writes: 6, Seconds: 0.1, WritesPerSec: 60}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"attach/detach QPS 20, burst 30; attacher QPS 5, burst 10", "volumes attached", "attaches/s",
		"API writes per attach", "p50 pod created → attached (ms)", "writes per attach by kind", "attaches/s possible"} {
		if !strings.Contains(out, want) {
			t.Errorf("attach report lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`volplane attacher\s+CPU 0\.06 s = 30\.000 ms per attach,\s+peak RSS 1\.0 MiB`).MatchString(out) {
		t.Errorf("no figures of the attacher's process:\n%s", out)
	}
	if !regexp.MustCompile(`p50 VA seen → attached \(ms\)\s+12\.0\s+24\.0\s+0\.50x better`).MatchString(out) {
		t.Errorf("no VA p50 row:\n%s", out)
	}
	for _, gone := range []string{"bind", "Bound", "claims"} {
		if strings.Contains(out, gone) {
			t.Errorf("attach report still says %q:\n%s", gone, out)
		}
	}
	// Every row's first value starts in the same column.
	firstValue := regexp.MustCompile(`^.*?\S {2,}`)
	col := -1
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "p50 ") && !strings.HasPrefix(line, "attaches/s ") {
			continue
		}
		c := len([]rune(firstValue.FindString(line)))
		if col == -1 {
			col = c
		} else if c != col {
			t.Errorf("misaligned row %q (value at column %d, want %d)", line, c, col)
		}
	}
	if Limits := (Report{Scenario: Attach}).Limits(); Limits != "attach/detach unthrottled; attacher unthrottled" {
		t.Errorf("unthrottled limits read %q", Limits)
	}
}
