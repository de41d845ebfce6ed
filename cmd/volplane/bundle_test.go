package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The bundled drivers' sockets are owner-only under a permissive umask, and
// so is their directory, even one an older `up` left open to its group.
func TestUpDriverSocketsArePrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir, err := os.MkdirTemp("", "vpb") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, "csi"), 0o750); err != nil {
		t.Fatal(err)
	}

	drivers, err := startDrivers(context.Background(), dir, []string{"node-1", "node-2"}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer drivers.stop()
	wantMode := func(path string, want fs.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %#o, want %#o", path, got, want)
		}
	}
	wantMode(filepath.Join(dir, "csi"), 0o700)
	for _, node := range []string{"node-1", "node-2"} {
		wantMode(filepath.Join(dir, "csi", node+".sock"), 0o600)
		wantMode(filepath.Join(dir, "hostpath", node), 0o700)
	}
}
