package bench

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The expand scenario is offered and runs the bundled drivers; its resizer
// limits are checked, and its reference needs the reference resizer's
// binary.
func TestExpandScenarioValidates(t *testing.T) {
	if !slices.Contains(Scenarios(), Expand) || !needsDrivers(Expand) {
		t.Fatalf("Scenarios() = %v: want expand, running the bundled drivers", Scenarios())
	}
	ok := Options{Scenario: Expand, Pairs: 1, QPS: ExpanderQPS, Burst: ExpanderBurst,
		ResizerQPS: ResizerQPS, ResizerBurst: ResizerBurst, Timeout: time.Minute, Executable: "/bin/volplane"}
	if err := ok.Validate(); err != nil {
		t.Errorf("expand at the reference limits: %v", err)
	}
	for name, mutate := range map[string]func(*Options){
		"resizer qps with no burst":     func(o *Options) { o.ResizerBurst = 0 },
		"compare without the reference": func(o *Options) { o.Compare = true },
	} {
		o := ok
		mutate(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: validated, want an error", name)
		}
	}
	withReference := ok
	withReference.Compare, withReference.ReferenceResizer = true, "/bin/volplane-reference-resizer"
	if err := withReference.Validate(); err != nil {
		t.Errorf("compare with the reference resizer: %v", err)
	}
}

// A claim counts as expanded once its status.capacity reaches the raised
// size, not when only its request does.
func TestClaimExpanded(t *testing.T) {
	claim := func(request, capacity int64) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claimName(4)}}
		c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(request, resource.BinarySI)}
		if capacity > 0 {
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(capacity, resource.BinarySI)}
		}
		return c
	}
	for _, tc := range []struct {
		name              string
		request, capacity int64
		want              bool
	}{
		{"not raised", expandFrom, expandFrom, false},
		{"raised, not grown", expandedSize, expandFrom, false},
		{"no capacity yet", expandedSize, 0, false},
		{"grown", expandedSize, expandedSize, true},
		{"grown further", expandedSize, 2 * expandedSize, true},
	} {
		name, done := claimExpanded(claim(tc.request, tc.capacity))
		if name != claimName(4) || done != tc.want {
			t.Errorf("%s: claimExpanded = %q, %v; want %q, %v", tc.name, name, done, claimName(4), tc.want)
		}
	}
	if _, done := claimExpanded(&corev1.PersistentVolume{}); done {
		t.Error("a PV counted as an expanded claim")
	}
	if !strings.Contains(string(raisePatch), `"storage":"2Mi"`) {
		t.Errorf("the raise patch %s does not ask for 2Mi", raisePatch)
	}
}

// The expand report speaks of expansions and gives both roles' limits.
func TestExpandReportWording(t *testing.T) {
	side := Side{Name: Volplane, Bound: 2, Complete: true, Seconds: 1, BindsPerSec: 2, Writes: 6, WritesPerBind: 3,
		CPUSeconds: 0.1, CPUMsPerBind: 50, WritesBy: map[string]int64{"persistentvolumes PATCH": 2},
		Measured: []ProcessFigures{{Name: "volplane expander", CPUSeconds: 0.04, PeakRSSBytes: 1 << 20}, {Name: "volplane resizer", CPUSeconds: 0.06, PeakRSSBytes: 1 << 20}}}
	r := Report{Scenario: Expand, Pairs: 2, QPS: 20, Burst: 30, ResizerQPS: 5, ResizerBurst: 10, Workers: 16,
		Sides:   []Side{side, {Name: Reference, Bound: 2, Complete: true, Seconds: 2, BindsPerSec: 1, WritesPerBind: 3}},
		Ceiling: &Ceiling{Writes: 6, Seconds: 0.1, WritesPerSec: 60}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"expander QPS 20, burst 30; resizer QPS 5, burst 10", "claims expanded", "expansions/s",
		"time to all expanded", "API writes per expansion", "p50 request raised → capacity seen (ms)",
		"writes per expansion by kind", "expansions/s possible"} {
		if !strings.Contains(out, want) {
			t.Errorf("expand report lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`volplane resizer\s+CPU 0\.06 s = 30\.000 ms per expansion`).MatchString(out) {
		t.Errorf("no figures of the resizer's process:\n%s", out)
	}
	for _, gone := range []string{"bind", "Bound"} {
		if strings.Contains(out, gone) {
			t.Errorf("expand report still says %q:\n%s", gone, out)
		}
	}
	if l := (Report{Scenario: Expand}).Limits(); l != "expander unthrottled; resizer unthrottled" {
		t.Errorf("unthrottled limits read %q", l)
	}
}
