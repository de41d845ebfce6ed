package hostpath

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"google.golang.org/grpc"

	"github.com/volplane/volplane/internal/endpoint"
)

// sanityAccessTypeEnv tells TestSanitySuite, in a child process, which
// access type to test.
const sanityAccessTypeEnv = "HOSTPATH_SANITY_ACCESS_TYPE"

// sanityNetworkEnv=1 tells TestSanitySuite to test the network mode: the
// controller on its socket, the node service through one node's socket.
const sanityNetworkEnv = "HOSTPATH_SANITY_NETWORK"

// sanityRealMountsEnv=1 runs csi-sanity with real mounts and loop devices
// instead of FakeMounter. It needs root (and loop devices for block), so it
// is off by default.
const sanityRealMountsEnv = "HOSTPATH_SANITY_REAL_MOUNTS"

// TestSanity runs csi-sanity against the driver once per access type and
// mode (node-local, network), with attaching, snapshots, cloning and
// expansion on. Ginkgo runs one suite per process, so each run is a child
// process of this test binary; the child's output (with the Ginkgo summary)
// goes to this test's output.
func TestSanity(t *testing.T) {
	for _, network := range []bool{false, true} {
		for _, accessType := range []string{"mount", "block"} {
			name := accessType
			if network {
				name = "network-" + accessType
			}
			t.Run(name, func(t *testing.T) {
				cmd := exec.Command(os.Args[0], "-test.run=^TestSanitySuite$")
				if testing.Verbose() {
					cmd.Args = append(cmd.Args, "-test.v")
				}
				cmd.Env = append(os.Environ(), sanityAccessTypeEnv+"="+accessType)
				if network {
					cmd.Env = append(cmd.Env, sanityNetworkEnv+"=1")
				}
				cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("csi-sanity %s failed: %v", name, err)
				}
			})
		}
	}
}

func TestSanitySuite(t *testing.T) {
	accessType := os.Getenv(sanityAccessTypeEnv)
	if accessType == "" {
		t.Skip("run by TestSanity in a child process")
	}
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	network := os.Getenv(sanityNetworkEnv) == "1"
	if network {
		cfg = testNetworkConfig(dir, NewFakeMounter(), testNode, "node-2")
	}
	if os.Getenv(sanityRealMountsEnv) == "1" {
		cfg.Mounter = nil // the kernel's bind mounts and loop devices
	}
	cfg.Interceptor = hideGetSnapshot
	r := startDriver(t, cfg)

	sc := sanity.NewTestConfig()
	// csi-test's connect watches for the connection to become ready only
	// after dialing, and waits a minute in vain if it already is: on a unix
	// socket it can be. So the test dials itself, after a pause that keeps
	// the connection "connecting" until csi-test watches. A "passthrough"
	// address makes csi-test keep this dialer instead of adding its own.
	sc.Address = "passthrough:///" + strings.TrimPrefix(r.cfg.Endpoint, endpoint.Scheme)
	sc.DialOptions = append(sc.DialOptions, grpc.WithContextDialer(slowUnixDial))
	if network {
		sc.ControllerAddress = sc.Address
		sc.ControllerDialOptions = append(sc.ControllerDialOptions, grpc.WithContextDialer(slowUnixDial))
		sc.Address = "passthrough:///" + strings.TrimPrefix(r.cfg.NodeEndpoints[testNode], endpoint.Scheme)
	}
	sc.TargetPath = filepath.Join(dir, "target")
	sc.StagingPath = filepath.Join(dir, "staging")
	sc.TestVolumeAccessType = accessType
	sc.TestVolumeSize = 1 << 30
	sc.TestVolumeExpandSize = 3 << 30
	sc.TestNodeVolumeAttachLimit = true
	sc.TestVolumeMutableParameters = map[string]string{ParamIOPS: "3000"}
	sanity.Test(t, sc)
}

// hideGetSnapshot drops GET_SNAPSHOT from the controller's capabilities:
// csi-test v5.4.0 fails "should return appropriate capabilities" on any
// capability it does not know, and it predates GET_SNAPSHOT (v5.6.0 knows
// it, and tests GetSnapshot: tools/sanity.sh runs that version against the
// driver with every capability).
func hideGetSnapshot(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if caps, ok := resp.(*csi.ControllerGetCapabilitiesResponse); ok && err == nil {
		caps.Capabilities = slices.DeleteFunc(slices.Clone(caps.Capabilities), func(c *csi.ControllerServiceCapability) bool {
			return c.GetRpc().GetType() == csi.ControllerServiceCapability_RPC_GET_SNAPSHOT
		})
	}
	return resp, err
}

func slowUnixDial(ctx context.Context, path string) (net.Conn, error) {
	select {
	case <-time.After(200 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}
