// Package hostpathtest serves the bundled hostpath driver in process for
// the tests of the packages that call CSI drivers.
package hostpathtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/hostpath"
)

// Serve runs a driver for node with capacity bytes and a fake mounter on a
// socket in a short temp dir (unix socket paths are limited to 108 bytes),
// returns its endpoint once the socket exists, and stops it with the test.
func Serve(t testing.TB, node string, capacity int64) string {
	t.Helper()
	return serve(t, hostpath.Config{NodeID: node, Capacity: capacity})
}

// ServeAttachRequired is Serve for a driver with attach required: it has
// the PUBLISH_UNPUBLISH_VOLUME capability.
func ServeAttachRequired(t testing.TB, node string, capacity int64) string {
	t.Helper()
	return serve(t, hostpath.Config{NodeID: node, Capacity: capacity, AttachRequired: true})
}

func serve(t testing.TB, cfg hostpath.Config) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "vp-hp-")
	if err != nil {
		t.Fatal(err)
	}
	return serveIn(t, dir, cfg)
}

// serveIn runs cfg with its socket and data in dir, which it removes with
// the test, and returns the endpoint once its socket exists.
func serveIn(t testing.TB, dir string, cfg hostpath.Config) string {
	t.Helper()
	endpoint := "unix://" + filepath.Join(dir, "csi.sock")
	cfg.Endpoint, cfg.DataDir, cfg.Mounter = endpoint, filepath.Join(dir, "data"), hostpath.NewFakeMounter()
	drv, err := hostpath.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- drv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = os.RemoveAll(dir) })
	waitSocket(t, filepath.Join(dir, "csi.sock"))
	return endpoint
}

func waitSocket(t testing.TB, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("driver socket %s never appeared", path)
}

// ServeNetwork runs a network-mode driver (hostpath.NetworkDriverName) for
// nodes with capacity bytes and a fake mounter, like Serve. It returns the
// controller's endpoint and each node's node-service endpoint.
func ServeNetwork(t testing.TB, capacity int64, nodes ...string) (controller string, nodeEndpoints map[string]string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "vp-hpn-")
	if err != nil {
		t.Fatal(err)
	}
	nodeEndpoints = map[string]string{}
	for _, node := range nodes {
		nodeEndpoints[node] = "unix://" + filepath.Join(dir, node+".sock")
	}
	controller = serveIn(t, dir, hostpath.Config{Network: true, NodeEndpoints: nodeEndpoints, Capacity: capacity})
	for _, endpoint := range nodeEndpoints {
		waitSocket(t, strings.TrimPrefix(endpoint, "unix://"))
	}
	return controller, nodeEndpoints
}
