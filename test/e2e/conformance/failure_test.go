package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/conformance"
)

// only is the registry's scenario name alone.
func only(t *testing.T, name string) []conformance.Scenario {
	t.Helper()
	for _, s := range conformance.Scenarios() {
		if s.Name == name {
			return []conformance.Scenario{s}
		}
	}
	t.Fatalf("no scenario %s", name)
	return nil
}

// failTimeout is how long a scenario meant to fail is given: long enough
// for the loops to try and say why, short for the suite.
const failTimeout = 5 * time.Second

// A user who says the node-local driver takes ReadWriteMany sees the
// scenario fail where the claim waits to bind, with the driver's
// CreateVolume error from the provisioner's Warning event, and explain's
// account of the claim; the JSON and JUnit outputs carry the same.
func TestFailureSaysStepCSICallAndExplain(t *testing.T) {
	lab := localLab(t)
	lab.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	report := conformance.Run(context.Background(), lab, conformance.Options{Timeout: failTimeout, Scenarios: only(t, "dynamic-provisioning-mount")})
	var text bytes.Buffer
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text.String())
	if report.Passed() || len(report.Results) != 1 || report.Results[0].Failure == nil {
		t.Fatalf("want one failure, got %+v", report.Results)
	}
	f := report.Results[0].Failure
	if f.Step != "the claim binds" || f.CSICall != "CreateVolume" || !strings.Contains(f.Event, "ProvisioningFailed") ||
		!strings.Contains(f.Event, "InvalidArgument") || f.Object == "" || !strings.Contains(f.Explain, "data") || len(f.Invariants) != 0 {
		t.Errorf("failure %+v: want the step the claim binds, CreateVolume's InvalidArgument from ProvisioningFailed, explain, and no invariant broken once cleaned up", f)
	}
	var js, junit bytes.Buffer
	if err := report.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"JSON": js.String(), "JUnit": junit.String()} {
		for _, want := range []string{"the claim binds", "CreateVolume", "ProvisioningFailed"} {
			if !strings.Contains(out, want) {
				t.Errorf("the %s output lacks %q:\n%s", name, want, out)
			}
		}
	}
}

// A lab whose pods' target paths do not lead to the volume's data (here:
// each to a directory of its own) fails the data check: the file the
// first pod wrote is not read back by the second.
func TestDataNotReadBackFails(t *testing.T) {
	lab := networkLab(t)
	dir := t.TempDir()
	lab.DataPath = func(target string) string {
		own := filepath.Join(dir, fmt.Sprintf("%x", sha256.Sum256([]byte(target))))
		if err := os.MkdirAll(own, 0o755); err != nil {
			t.Error(err)
		}
		return own
	}
	report := conformance.Run(context.Background(), lab, conformance.Options{Scenarios: only(t, "dynamic-provisioning-mount")})
	if r := report.Results[0]; r.Status != conformance.Fail || r.Failure.Step != "the second pod reads the file back" {
		t.Errorf("want a failure reading the file back, got %+v %+v", r, r.Failure)
	}
}

// A scenario's failing step is reported by name; the scenario's objects
// are cleaned up all the same and the invariants still hold after it.
func TestInjectedScenarioFails(t *testing.T) {
	lab := networkLab(t)
	stub := conformance.Scenario{Name: "stub", Run: func(s *conformance.Session) error {
		return s.Steps(
			conformance.Step{Name: "create a claim", Do: func(ctx context.Context) error {
				_, err := lab.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Create(ctx, claim(s.Namespace, lab.ImmediateClass), createOptions)
				return err
			}},
			conformance.Step{Name: "break", Do: func(context.Context) error { return errors.New("broken on purpose") }},
			conformance.Step{Name: "never", Do: func(context.Context) error { t.Error("a step after a failure ran"); return nil }},
		)
	}}
	report := conformance.Run(context.Background(), lab, conformance.Options{Scenarios: []conformance.Scenario{stub}})
	r := report.Results[0]
	if r.Status != conformance.Fail || r.Failure.Step != "break" || r.Failure.Error != "broken on purpose" || len(r.Failure.Invariants) != 0 {
		t.Errorf("want the step break failed alone, got %+v %+v", r, r.Failure)
	}
}
