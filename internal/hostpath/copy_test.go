package hostpath

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// secretText marks the content a copy must never reach: a file outside the
// source, as another pod's token or another tenant's volume on the node.
const secretText = "secret of another tenant"

// outsideSecret makes a directory outside any volume holding a secret
// file, and returns the directory and the file.
func outsideSecret(t *testing.T, root string) (dir, file string) {
	t.Helper()
	dir = filepath.Join(root, "outside")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// findSecret returns the path of a regular file under dir holding the
// secret, or "". Symlinks are not followed: a link copied as a link is
// what a copy must do.
func findSecret(t *testing.T, dir string) string {
	t.Helper()
	var found string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found != "" || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), secretText) {
			found = path
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return found
}

// syncFreeTempDir is a temporary directory on tmpfs where there is one, so
// that the many fsyncs of a test that copies a tree hundreds of times cost
// nothing; elsewhere t.TempDir.
func syncFreeTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "hostpath-copy-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// A pod that keeps swapping a directory and a file of its own volume with
// symlinks pointing outside it, while its owner clones the volume, must
// never get what is outside into the clone. The swapper is the test
// itself, writing into the source as root (the pod's view of its volume
// is this directory). A copy may fail while the source changes under it;
// what it wrote must still hold nothing from outside.
func TestCopyTreeNeverFollowsSymlinksSwappedIn(t *testing.T) {
	root := syncFreeTempDir(t)
	outDir, outFile := outsideSecret(t, root)
	src := filepath.Join(root, "src")
	for _, dir := range []string{src, filepath.Join(src, "d"), filepath.Join(src, "d", "e")} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"f", "d/token", "d/e/token"} {
		if err := os.WriteFile(filepath.Join(src, f), []byte("own data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The swapped-in links: "d" alternates with a link to the outside
	// directory, "f" with a link to the outside file, each atomically.
	if err := os.Symlink(outDir, filepath.Join(src, "d-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outFile, filepath.Join(src, "f-link")); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, pair := range [][2]string{{"d", "d-link"}, {"f", "f-link"}} {
				err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(src, pair[0]), unix.AT_FDCWD, filepath.Join(src, pair[1]), unix.RENAME_EXCHANGE)
				if err != nil {
					t.Errorf("swap %s: %v", pair[0], err)
					return
				}
			}
			swaps.Add(1)
		}
	})

	const clones = 100
	var copied int
	for i := range clones {
		dst := filepath.Join(root, "clone")
		err := copyTree(context.Background(), src, dst)
		if err == nil {
			copied++
		}
		if leak := findSecret(t, dst); leak != "" {
			close(stop)
			wg.Wait()
			t.Fatalf("clone %d of %d (after %d swaps) holds the secret from outside the source at %s", i+1, clones, swaps.Load(), leak)
		}
		if err := os.RemoveAll(dst); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d of %d copies completed while the source was swapped %d times", copied, clones, swaps.Load())
	if copied == 0 {
		t.Errorf("no copy of %d completed while the source changed: cloning a volume in use must stay possible", clones)
	}
}

// The links a volume holds from the start are copied as links: the copy
// never reads what they point to.
func TestCopyTreeCopiesSymlinksAsLinks(t *testing.T) {
	root := t.TempDir()
	outDir, outFile := outsideSecret(t, root)
	src := filepath.Join(root, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"dir-link": outDir, "file-link": outFile, "relative": "../outside/token"} {
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(root, "clone")
	if err := copyTree(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	if leak := findSecret(t, dst); leak != "" {
		t.Fatalf("clone holds the secret at %s", leak)
	}
	for name, want := range map[string]string{"dir-link": outDir, "file-link": outFile, "relative": "../outside/token"} {
		if got, err := os.Readlink(filepath.Join(dst, name)); err != nil || got != want {
			t.Errorf("%s: link %q, %v; want a link to %q", name, got, err, want)
		}
	}
}

// A copy keeps the tree: files with their data, holes, permissions and
// owners, directories with theirs, links as links; special files are
// not data and are left out.
func TestCopyTreeKeepsTheTree(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	for _, dir := range []string{src, filepath.Join(src, "a"), filepath.Join(src, "a", "ro")} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "a", "ro", "f"), []byte("data"), 0o640); err != nil {
		t.Fatal(err)
	}
	sparse, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sparse.WriteAt([]byte("end"), 64<<20); err != nil {
		t.Fatal(err)
	}
	sparse.Close()
	if err := os.Chmod(filepath.Join(src, "a", "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a/ro/f", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(filepath.Join(src, "a", "ro", "f"), 1234, 5678); err != nil {
			t.Fatal(err)
		}
	}

	dst := filepath.Join(root, "clone")
	if err := copyTree(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "a", "ro", "f")); err != nil || string(data) != "data" {
		t.Errorf("a/ro/f = %q, %v; want the source's data", data, err)
	}
	for path, want := range map[string]fs.FileMode{"a": fs.ModeDir | 0o755, "a/ro": fs.ModeDir | 0o555, "a/ro/f": 0o640} {
		if fi, err := os.Lstat(filepath.Join(dst, path)); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, %v; want mode %v", path, fi.Mode(), err, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dst, "a", "ro", "f")); err == nil && os.Geteuid() == 0 {
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1234 || st.Gid != 5678 {
			t.Errorf("a/ro/f owned by %d:%d, want the source's 1234:5678", st.Uid, st.Gid)
		}
	}
	fi, err := os.Stat(filepath.Join(dst, "sparse"))
	if err != nil || fi.Size() != 64<<20+3 {
		t.Fatalf("sparse: %v, %v; want the source's size", fi, err)
	}
	if allocated := fi.Sys().(*syscall.Stat_t).Blocks * 512; allocated > 1<<20 {
		t.Errorf("sparse copy allocates %d bytes for 3 bytes of data; it should keep the holes", allocated)
	}
	if link, err := os.Readlink(filepath.Join(dst, "link")); err != nil || link != "a/ro/f" {
		t.Errorf("link = %q, %v; want it copied as a link", link, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "fifo")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("fifo: %v; want it left out", err)
	}
}

// A filesystem mounted inside the source is not the volume's data (a pod
// cannot mount there; whoever did may have mounted anything): the copy
// refuses, saying why, rather than read another device.
func TestCopyTreeStaysOnTheSourceDevice(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	mnt := filepath.Join(src, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs for the test: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	if err := os.WriteFile(filepath.Join(mnt, "token"), []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(root, "clone")
	err := copyTree(context.Background(), src, dst)
	if err == nil || !strings.Contains(err.Error(), "another filesystem is mounted there") {
		t.Errorf("copy of a source with a mount inside: %v, want it refused as another filesystem", err)
	}
	if leak := findSecret(t, dst); leak != "" {
		t.Errorf("clone holds the mounted filesystem's file at %s", leak)
	}
}
