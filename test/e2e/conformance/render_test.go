package conformance

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/conformance"
	"github.com/volplane/volplane/internal/stacktest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sampleReport has one result of each status, the failure with every
// detail a failure can carry.
func sampleReport() conformance.Report {
	return conformance.Report{Driver: "example.csi.io", Results: []conformance.Result{
		{Name: "dynamic-provisioning-mount", Status: conformance.Pass, Duration: 1500 * time.Millisecond, Seconds: 1.5},
		{Name: "wait-for-first-consumer", Status: conformance.Fail, Duration: 60 * time.Second, Seconds: 60,
			Reason: "the claim binds: timed out waiting for claim data to be Bound: claim data is Pending",
			Failure: &conformance.Failure{
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
		{Name: "raw-block", Status: conformance.Skip, Reason: "the driver is not said to take raw block volumes (Lab.Block)"},
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
	var back conformance.Report
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
	if suite.Name != conformance.SuiteName || suite.Tests != 3 || suite.Failures != 1 || suite.Skipped != 1 ||
		suite.Cases[1].Failure == nil || suite.Cases[2].Skipped == nil || suite.Cases[0].Failure != nil {
		t.Errorf("JUnit read back as %+v", suite)
	}
}

func TestPassed(t *testing.T) {
	cases := []struct {
		statuses []conformance.Status
		want     bool
	}{
		{nil, true},
		{[]conformance.Status{conformance.Pass, conformance.Skip}, true},
		{[]conformance.Status{conformance.Skip}, true},
		{[]conformance.Status{conformance.Pass, conformance.Fail}, false},
	}
	for _, c := range cases {
		var r conformance.Report
		for _, s := range c.statuses {
			r.Results = append(r.Results, conformance.Result{Status: s})
		}
		if got := r.Passed(); got != c.want {
			t.Errorf("Passed of %v = %v, want %v", c.statuses, got, c.want)
		}
	}
}

// A run of several drivers renders each under its name, and its JSON and
// JUnit keep the drivers apart.
func TestReportsOfSeveralDrivers(t *testing.T) {
	other := conformance.Report{Driver: "other.csi.io", Results: []conformance.Result{{Name: "clone", Status: conformance.Pass, Duration: time.Second, Seconds: 1}}}
	rs := conformance.Reports{sampleReport(), other}
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
	var back []conformance.Report
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
	if len(suites.Suites) != 2 || suites.Suites[0].Failures != 1 || suites.Suites[1].Cases[0].ClassName != conformance.SuiteName+".other.csi.io" {
		t.Errorf("JUnit read back as %+v", suites)
	}
}

// junitSuite and junitSuites are what a CI system reads of the JUnit XML.
type junitSuite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Cases    []struct {
		ClassName string    `xml:"classname,attr"`
		Skipped   *struct{} `xml:"skipped"`
		Failure   *struct{} `xml:"failure"`
	} `xml:"testcase"`
}

type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}
