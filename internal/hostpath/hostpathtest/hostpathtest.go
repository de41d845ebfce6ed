// Package hostpathtest serves the bundled hostpath driver in process for
// the tests of the packages that call CSI drivers.
package hostpathtest

import (
	"context"
	"os"
	"path/filepath"
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
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "csi.sock")); err == nil {
			return endpoint
		}
	}
	t.Fatal("driver socket never appeared")
	return ""
}
