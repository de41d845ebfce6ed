// Package sanity runs csi-sanity v5.6.0 against the bundled CSI driver
// through ../sanity.sh. It lives in the tools module, which the volplane
// module's `go test ./...` does not enter; run it from tools/:
//
//	cd tools && go test ./sanity/ -v
//
// It needs root and loop devices (the driver mounts for real) and skips
// without them.
package sanity

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// hostpathPasses is how many specs csi-driver-host-path passes with
// csi-sanity; the bundled driver must pass at least as many.
const hostpathPasses = 86

var result = regexp.MustCompile(`(?m)^(mount|block): (\d+) passed, (\d+) failed, (\d+) skipped`)

func TestCSISanityV5_6(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the driver mounts for real: needs root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skip("block volumes need loop devices")
	}
	out, err := exec.Command("../sanity.sh", "mount", "block").CombinedOutput()
	t.Logf("sanity.sh:\n%s", out)
	if err != nil {
		t.Fatalf("sanity.sh: %v", err)
	}
	found := result.FindAllSubmatch(out, -1)
	if len(found) != 2 {
		t.Fatalf("want a result for mount and for block, got %d", len(found))
	}
	for _, m := range found {
		passed, _ := strconv.Atoi(string(m[2]))
		failed, _ := strconv.Atoi(string(m[3]))
		if passed < hostpathPasses || failed != 0 {
			t.Errorf("%s: %d passed, %d failed; want at least %d passed and none failed", m[1], passed, failed, hostpathPasses)
		}
	}
}
