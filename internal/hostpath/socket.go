package hostpath

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/endpoint"
)

const (
	// socketPerm lets only the driver's own user (root, with the kubelet and
	// the sidecars) connect: whoever reaches the socket can delete volumes.
	socketPerm fs.FileMode = 0o600
	// socketDirPerm is the mode of a socket directory the driver creates.
	socketDirPerm fs.FileMode = 0o700
)

// listenUnix listens on path, replacing a socket left behind by a driver that
// died, but never a live socket or a file that is not a socket. The socket
// has mode socketPerm whatever the umask, from the moment it appears at path.
func listenUnix(path string) (net.Listener, error) {
	if err := MkdirPrivate(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("socket dir: %w", err)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("socket: %w", err)
	case fi.Mode()&fs.ModeSocket == 0:
		return nil, fmt.Errorf("socket %s: a file that is not a socket is in the way", path)
	case socketAlive(path):
		return nil, fmt.Errorf("socket %s: another process is serving it", path)
	}
	// A stale socket is replaced by the rename in listenPrivate, or removed
	// by listenInPrivateDir.
	// Decided on the longest name listenPrivate may bind under, not on the
	// one it happens to draw, so the same path always gets the same answer.
	dir := filepath.Dir(path)
	switch bound := filepath.Join(dir, privateBindName); {
	case len(bound) <= endpoint.MaxSocketPath:
		return listenPrivate(path)
	case isPrivateDir(dir):
		return listenInPrivateDir(path)
	default:
		return nil, fmt.Errorf("listen: socket %s: its directory is open to other users and the path is too long to bind "+
			"the socket privately first (up to %d bytes, at most %d); use a shorter path or a directory only its owner can enter",
			path, len(bound), endpoint.MaxSocketPath)
	}
}

// privateBindName is the longest name listenPrivate binds under, relative
// to the socket's directory: "." and up to 10 digits, then "/s".
const privateBindName = ".0123456789/s"

// isPrivateDir reports whether only this process's user can enter dir.
func isPrivateDir(dir string) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().Perm()&0o077 == 0 && int(st.Uid) == os.Geteuid()
}

// listenInPrivateDir binds path directly, then sets its mode: no other user
// can enter its directory, so none can connect before the chmod. It serves
// paths too long for listenPrivate.
func listenInPrivateDir(path string) (_ net.Listener, err error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if err := os.Chmod(path, socketPerm); err != nil {
		lis.Close()
		return nil, fmt.Errorf("listen: %w", err)
	}
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	return lis, nil
}

// listenPrivate binds the socket in a fresh directory only the owner can
// enter, sets its mode there, and only then renames it to path: bind creates
// the socket with the umask's mode, and a process connecting before the
// chmod would keep its connection. The directory already at path may be
// one the driver does not own (the kubelet's plugin directory), so it is
// not the directory's mode that protects the socket.
func listenPrivate(path string) (_ net.Listener, err error) {
	private, err := os.MkdirTemp(filepath.Dir(path), ".")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	defer os.RemoveAll(private) // empty once the socket is renamed away
	if err := os.Chmod(private, socketDirPerm); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	bound := filepath.Join(private, "s")
	if len(bound) > endpoint.MaxSocketPath {
		return nil, fmt.Errorf("listen: socket %s: its directory is open to other users and the path is too long to bind "+
			"the socket privately first (%d bytes, at most %d); use a shorter path or a directory only its owner can enter",
			path, len(bound), endpoint.MaxSocketPath)
	}
	lis, err := net.Listen("unix", bound)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	defer func() {
		if err != nil {
			lis.Close()
		}
	}()
	// The listener would remove the socket by its bound name on Close; the
	// driver removes it by its real name itself.
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(bound, socketPerm); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if err := os.Rename(bound, path); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return lis, nil
}

// MkdirPrivate makes sure dir exists; the directories it creates have mode
// 0700 whatever the umask. An existing directory keeps its mode: it may be
// shared (the kubelet's plugin directory, /run).
func MkdirPrivate(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := MkdirPrivate(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, socketDirPerm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // created meanwhile by someone else: not ours to chmod
		}
		return err
	}
	return os.Chmod(dir, socketDirPerm)
}

func socketAlive(path string) bool {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func removeSocket(logger klog.Logger, path string) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		logger.Error(err, "could not remove the socket", "path", path)
	}
}
