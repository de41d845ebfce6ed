package bench

import (
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The dynamic scenario's reference needs the reference provisioner's
// binary; volplane alone does not.
func TestDynamicScenarioValidates(t *testing.T) {
	ok := Options{Scenario: Dynamic, Pairs: 1, QPS: ProvisionerQPS, Burst: ProvisionerBurst, Timeout: time.Minute, Executable: "/bin/volplane"}
	if err := ok.Validate(); err != nil {
		t.Errorf("dynamic at the external-provisioner's limits: %v", err)
	}
	compare := ok
	compare.Compare = true
	if err := compare.Validate(); err == nil || !strings.Contains(err.Error(), ReferenceProvisionerProgram) {
		t.Errorf("compare without the reference provisioner: %v, want an error naming %s", err, ReferenceProvisionerProgram)
	}
	compare.ReferenceProvisioner = "/bin/" + ReferenceProvisionerProgram
	if err := compare.Validate(); err != nil {
		t.Errorf("compare with the reference provisioner: %v", err)
	}
}

// A PV counts for the bench claim its claimRef names, and only for a claim
// of the bench namespace.
func TestPVForClaim(t *testing.T) {
	pv := func(ref *corev1.ObjectReference) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"}, Spec: corev1.PersistentVolumeSpec{ClaimRef: ref}}
	}
	if name, ok := pvForClaim(pv(&corev1.ObjectReference{Namespace: benchNS, Name: claimName(7)})); !ok || name != claimName(7) {
		t.Errorf("pvForClaim = %q, %v; want %q, true", name, ok, claimName(7))
	}
	for what, obj := range map[string]any{
		"no claimRef":         pv(nil),
		"another namespace":   pv(&corev1.ObjectReference{Namespace: "default", Name: claimName(7)}),
		"a claim, not any PV": &corev1.PersistentVolumeClaim{},
	} {
		if _, ok := pvForClaim(obj); ok {
			t.Errorf("%s: counted as a PV made for a bench claim", what)
		}
	}
}

// The dynamic report speaks of provisions, gives the provisioner's limits
// and the time to a claim's PV.
func TestDynamicReportWording(t *testing.T) {
	side := Side{Name: Volplane, Bound: 2, Complete: true, Seconds: 1, BindsPerSec: 2, Writes: 12, WritesPerBind: 6,
		P50Ms: 30, P90Ms: 40, P99Ms: 50, PVP50Ms: 10, PVP90Ms: 20, PVP99Ms: 25.5,
		CPUSeconds: 0.1, CPUMsPerBind: 50, WritesBy: map[string]int64{"persistentvolumes POST": 2}}
	r := Report{Scenario: Dynamic, Pairs: 2, QPS: ProvisionerQPS, Burst: ProvisionerBurst, Workers: 16,
		Sides:   []Side{side, {Name: Reference, Bound: 2, Complete: true, Seconds: 2, BindsPerSec: 1, WritesPerBind: 3}},
		Ceiling: &Ceiling{Writes: 6, Seconds: 0.1, WritesPerSec: 60}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"provisioner QPS 5, burst 10; binder unthrottled", "time to all bound", "provisions/s",
		"p99 claim created → Bound (ms)", "API writes per provision",
		"writes per provision by kind", "persistentvolumes POST", "provisions/s possible"} {
		if !strings.Contains(out, want) {
			t.Errorf("dynamic report lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`p99 claim created → PV seen \(ms\)\s+25\.5\s`).MatchString(out) {
		t.Errorf("no row of the time to a claim's PV:\n%s", out)
	}
	for _, gone := range []string{"bind ", "binds", "time to Bound"} {
		if strings.Contains(out, gone) {
			t.Errorf("dynamic report still says %q:\n%s", gone, out)
		}
	}
	if l := (Report{Scenario: Dynamic}).Limits(); l != "provisioner unthrottled; binder unthrottled" {
		t.Errorf("unthrottled limits read %q", l)
	}
}
