package hostpath

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
)

// sanityAccessTypeEnv tells TestSanitySuite, in a child process, which
// access type to test.
const sanityAccessTypeEnv = "HOSTPATH_SANITY_ACCESS_TYPE"

// TestSanity runs csi-sanity against the driver once per access type, with
// attaching, snapshots, cloning and expansion on. Ginkgo runs one suite per
// process, so each access type runs in a child process of this test binary;
// the child's output (with the Ginkgo summary) goes to this test's output.
func TestSanity(t *testing.T) {
	for _, accessType := range []string{"mount", "block"} {
		t.Run(accessType, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSanitySuite$")
			if testing.Verbose() {
				cmd.Args = append(cmd.Args, "-test.v")
			}
			cmd.Env = append(os.Environ(), sanityAccessTypeEnv+"="+accessType)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("csi-sanity with %s volumes failed: %v", accessType, err)
			}
		})
	}
}

func TestSanitySuite(t *testing.T) {
	accessType := os.Getenv(sanityAccessTypeEnv)
	if accessType == "" {
		t.Skip("run by TestSanity in a child process")
	}
	dir := shortTempDir(t)
	r := startDriver(t, testConfig(dir, NewFakeMounter()))

	cfg := sanity.NewTestConfig()
	cfg.Address = r.cfg.Endpoint
	cfg.TargetPath = filepath.Join(dir, "target")
	cfg.StagingPath = filepath.Join(dir, "staging")
	cfg.TestVolumeAccessType = accessType
	cfg.TestVolumeSize = 1 << 30
	cfg.TestVolumeExpandSize = 3 << 30
	cfg.TestNodeVolumeAttachLimit = true
	sanity.Test(t, cfg)
}
