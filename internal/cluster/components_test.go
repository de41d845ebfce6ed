package cluster

import (
	"strings"
	"testing"
)

// The embedded controller manager leaves every loop volplane replaces off,
// unless a loop is asked to be kept; names that are not replaced loops
// cannot turn anything on.
func TestControllerManagerKeepsOnlyAskedReplacedLoops(t *testing.T) {
	controllers := func(keep []string) string {
		for _, a := range controllerManagerArgs(pki{}, keep) {
			if v, ok := strings.CutPrefix(a, "--controllers="); ok {
				return v
			}
		}
		t.Fatal("no --controllers flag")
		return ""
	}
	all := controllers(nil)
	for _, c := range ReplacedControllers {
		if !strings.Contains(all, ",-"+c) {
			t.Errorf("default --controllers=%s leaves %s on", all, c)
		}
	}
	kept := controllers([]string{"attachdetach", "not-a-loop"})
	if strings.Contains(kept, "-attachdetach") {
		t.Errorf("--controllers=%s still turns attachdetach off", kept)
	}
	if strings.Contains(kept, "not-a-loop") {
		t.Errorf("--controllers=%s names an unknown loop", kept)
	}
	for _, c := range ReplacedControllers {
		if c != "attachdetach" && !strings.Contains(kept, ",-"+c) {
			t.Errorf("--controllers=%s turns %s on", kept, c)
		}
	}
}
