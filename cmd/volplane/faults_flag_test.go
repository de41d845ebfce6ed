package main

import (
	"strings"
	"testing"
)

// The fault injection flags are hidden (for soak tests only) and a bad
// spec is refused before anything starts, naming what is wrong.
func TestFaultFlagsAreHiddenAndCheckedUpFront(t *testing.T) {
	for _, sub := range []string{"driver", "up"} {
		help, err := volplane(t, sub, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("volplane %s --help: %v\n%s", sub, err, help)
		}
		if strings.Contains(string(help), "inject-faults") || strings.Contains(string(help), "without-loops") {
			t.Errorf("volplane %s --help shows a soak-test flag:\n%s", sub, help)
		}
	}
	for _, args := range [][]string{
		{"driver", "--endpoint", "unix:///tmp/x.sock", "--node-id", "n", "--data-dir", t.TempDir(), "--inject-faults", "timeout=1.5"},
		{"up", "--data-dir", t.TempDir(), "--inject-faults", "often=0.1"},
	} {
		out, err := volplane(t, args...).CombinedOutput()
		if err == nil {
			t.Errorf("volplane %s accepted a bad fault spec:\n%s", strings.Join(args, " "), out)
			continue
		}
		if !strings.Contains(string(out), "inject-faults") || !strings.Contains(string(out), "faults:") {
			t.Errorf("volplane %s refused a bad fault spec without naming it:\n%s", strings.Join(args, " "), out)
		}
	}
}
