package conformance

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/stacktest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sampleReport has one result of each status, the failure with every
// detail a failure can carry.
func sampleReport() Report {
	return Report{Driver: "example.csi.io", Results: []Result{
		{Name: "dynamic-provisioning-mount", Status: Pass, Duration: 1500 * time.Millisecond, Seconds: 1.5},
		{Name: "wait-for-first-consumer", Status: Fail, Duration: 60 * time.Second, Seconds: 60,
			Reason: "the claim binds: timed out waiting for claim data to be Bound: claim data is Pending",
			Failure: &Failure{
				Step:    "the claim binds",
				Error:   "timed out waiting for claim data to be Bound: claim data is Pending",
				Object:  "PersistentVolumeClaim conformance-x/data",
				CSICall: "CreateVolume",
				Event:   "PersistentVolumeClaim conformance-x/data: ProvisioningFailed: rpc error: code = ResourceExhausted desc = <out of space>",
				Explain: "claim conformance-x/data: Pending\n  why: provisioning failed",
				Invariants: []string{
					"claim conformance-x/data was deleted, yet its Delete PV pvc-1 is still there (phase Released)",
				},
			}},
		{Name: "raw-block", Status: Skip, Reason: "the driver is not said to take raw block volumes (Lab.Block)"},
	}}
}

func TestReportRenderers(t *testing.T) {
	r := sampleReport()
	for name, write := range map[string]func(*bytes.Buffer) error{
		"report.txt":  func(b *bytes.Buffer) error { return r.WriteText(b) },
		"report.json": func(b *bytes.Buffer) error { return r.WriteJSON(b) },
		"report.xml":  func(b *bytes.Buffer) error { return r.WriteJUnit(b) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		stacktest.Golden(t, name, b.String(), *update)
	}
}

// The JSON and JUnit outputs parse back into what CI reads: the statuses
// and, for the failure, its step and CSI error.
func TestReportOutputsParse(t *testing.T) {
	r := sampleReport()
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Results) != 3 || back.Results[1].Failure == nil || back.Results[1].Failure.CSICall != "CreateVolume" || back.Passed() {
		t.Errorf("JSON read back as %+v", back)
	}
	var x bytes.Buffer
	if err := r.WriteJUnit(&x); err != nil {
		t.Fatal(err)
	}
	var suite junitSuite
	if err := xml.Unmarshal(x.Bytes(), &suite); err != nil {
		t.Fatal(err)
	}
	if suite.Name != SuiteName || suite.Tests != 3 || suite.Failures != 1 || suite.Skipped != 1 ||
		suite.Cases[1].Failure == nil || suite.Cases[2].Skipped == nil || suite.Cases[0].Failure != nil {
		t.Errorf("JUnit read back as %+v", suite)
	}
}

func TestPassed(t *testing.T) {
	cases := []struct {
		statuses []Status
		want     bool
	}{
		{nil, true},
		{[]Status{Pass, Skip}, true},
		{[]Status{Skip}, true},
		{[]Status{Pass, Fail}, false},
	}
	for _, c := range cases {
		var r Report
		for _, s := range c.statuses {
			r.Results = append(r.Results, Result{Status: s})
		}
		if got := r.Passed(); got != c.want {
			t.Errorf("Passed of %v = %v, want %v", c.statuses, got, c.want)
		}
	}
}

// A run of several drivers renders each under its name, and its JSON and
// JUnit keep the drivers apart.
func TestReportsOfSeveralDrivers(t *testing.T) {
	other := Report{Driver: "other.csi.io", Results: []Result{{Name: "clone", Status: Pass, Duration: time.Second, Seconds: 1}}}
	rs := Reports{sampleReport(), other}
	if rs.Failed() != 1 {
		t.Errorf("Failed() = %d, want 1", rs.Failed())
	}
	var text bytes.Buffer
	if err := rs.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(text.Bytes(), []byte("Driver example.csi.io\n")) || !bytes.Contains(text.Bytes(), []byte("\nDriver other.csi.io\nSCENARIO")) {
		t.Errorf("text:\n%s", text.String())
	}
	var js bytes.Buffer
	if err := rs.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back []Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != 2 || back[1].Driver != "other.csi.io" {
		t.Errorf("JSON read back as %+v (%v)", back, err)
	}
	var x bytes.Buffer
	if err := rs.WriteJUnit(&x); err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(x.Bytes(), &suites); err != nil {
		t.Fatal(err)
	}
	if len(suites.Suites) != 2 || suites.Suites[0].Failures != 1 || suites.Suites[1].Cases[0].ClassName != SuiteName+".other.csi.io" {
		t.Errorf("JUnit read back as %+v", suites)
	}
}
