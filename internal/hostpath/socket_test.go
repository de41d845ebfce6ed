package hostpath

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volplane/volplane/internal/endpoint"
)

// permissiveUmask sets the umask to 0 for the test, as a careless service
// manager might: nothing the driver creates may then rely on the umask.
func permissiveUmask(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
}

func wantPerm(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %#o, want %#o", path, got, want)
	}
}

// TestSocketIsPrivateWhateverTheUmask: with umask 0, the socket and the
// directory the driver creates for it are still owner-only, and nothing but
// the socket is left in that directory.
func TestSocketIsPrivateWhateverTheUmask(t *testing.T) {
	permissiveUmask(t)
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	sockDir := filepath.Join(dir, "plugins", "hp")
	cfg.Endpoint = "unix://" + filepath.Join(sockDir, "csi.sock")
	startDriver(t, cfg)

	wantPerm(t, filepath.Join(sockDir, "csi.sock"), 0o600)
	wantPerm(t, sockDir, 0o700)
	wantPerm(t, filepath.Join(dir, "plugins"), 0o700)
	wantPerm(t, cfg.DataDir, 0o700)
	if entries, _ := os.ReadDir(sockDir); len(entries) != 1 {
		t.Errorf("socket dir holds %v, want just the socket", entries)
	}
}

// TestSocketInASharedDirIsPrivate: a socket directory that exists, open to
// everyone (the kubelet's plugin directory may be), keeps its mode, and the
// socket is still owner-only; a stale socket there is replaced.
func TestSocketInASharedDirIsPrivate(t *testing.T) {
	permissiveUmask(t)
	dir := shortTempDir(t)
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(shared, "csi.sock")
	leaveStaleSocket(t, sock)
	cfg := testConfig(dir, NewFakeMounter())
	cfg.Endpoint = "unix://" + sock
	serving(t, startDriver(t, cfg))

	wantPerm(t, sock, 0o600)
	wantPerm(t, shared, 0o777)
}

// longSocketDir is a directory under dir whose path is so long that a
// socket in it cannot be bound in a private subdirectory first.
func longSocketDir(dir string) string {
	return filepath.Join(dir, strings.Repeat("d", endpoint.MaxSocketPath-len(privateBindName)-len(dir)))
}

// TestLongSocketPathInAPrivateDirIsPrivate: a socket in a directory too long
// to bind in a private subdirectory first is bound in place, which is safe
// in a directory only the owner can enter, and still gets mode 0600.
func TestLongSocketPathInAPrivateDirIsPrivate(t *testing.T) {
	permissiveUmask(t)
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	sockDir := longSocketDir(dir)
	sock := filepath.Join(sockDir, "c.sock")
	if len(sock) > endpoint.MaxSocketPath || len(filepath.Join(sockDir, privateBindName)) <= endpoint.MaxSocketPath {
		t.Fatalf("socket path %s does not need the in-place bind", sock)
	}
	leaveStaleSocket(t, sock)
	cfg.Endpoint = "unix://" + sock
	serving(t, startDriver(t, cfg))

	wantPerm(t, sock, 0o600)
	wantPerm(t, sockDir, 0o700)
}

// serving waits until the driver answers on its socket: with a stale socket
// in place, the socket's existence says nothing.
func serving(t *testing.T, r *runningDriver) {
	t.Helper()
	if _, err := r.identity.Probe(context.Background(), &csi.ProbeRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("Probe: %v", err)
	}
}

// leaveStaleSocket leaves a socket at path that no process serves, as a
// killed driver does; its directory is created private.
func leaveStaleSocket(t *testing.T, path string) {
	t.Helper()
	if err := MkdirPrivate(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	lis.Close()
}

// TestLongSocketPathInASharedDirIsRefused: a socket in a directory others
// can enter, too long to bind privately first, cannot be private from the
// start, so the driver refuses it rather than expose the socket.
func TestLongSocketPathInASharedDirIsRefused(t *testing.T) {
	permissiveUmask(t)
	shared := longSocketDir(shortTempDir(t))
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(shared, "c.sock")
	lis, err := listenUnix(sock)
	if err == nil {
		lis.Close()
		t.Fatalf("listenUnix(%s) succeeded, want a refusal", sock)
	}
	if !strings.Contains(err.Error(), "too long") {
		t.Errorf("error %q does not say the path is too long", err)
	}
	if entries, _ := os.ReadDir(shared); len(entries) != 0 {
		t.Errorf("the refused listen left %v behind", entries)
	}
}
