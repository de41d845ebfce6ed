package hostpath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// Whence values of lseek(2) that find data and holes in a sparse file; the
// os package passes them through unchanged.
const (
	seekData = 3
	seekHole = 4
)

// copyChunk is the unit of copying; all-zero chunks are skipped, leaving
// holes, so copying a mostly empty block volume costs what it holds.
const copyChunk = 1 << 20

// copyTree copies the directory src to dst (which must not exist): regular
// files, directories and symlinks, with their permissions, and the owner
// where the driver may set it. Devices, sockets and pipes are skipped: they
// are not data. Files and directories are fsync'ed, because a snapshot is
// acknowledged as soon as the copy returns; the caller syncs dst's parent.
//
// src may be a volume in use, and the pod using it may replace any of its
// directories or files with a symlink at any moment, also between the copy
// looking at an entry and opening it. So the copy never resolves a path
// below src: it walks with directory descriptors, opens each entry by its
// name in the directory already open, with O_NOFOLLOW, and copies it only
// if it is the very file it stat'ed (same device and inode) and lies on
// src's own device. Symlinks are copied as links, never followed. So the
// copy cannot reach outside src.
func copyTree(ctx context.Context, src, dst string) error {
	in, err := openDirAt(unix.AT_FDCWD, src)
	if err != nil {
		return err
	}
	defer in.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(in.Fd()), &st); err != nil {
		return fmt.Errorf("stat %s: %w", src, err)
	}
	out, err := makeDirAt(unix.AT_FDCWD, dst)
	if err != nil {
		return err
	}
	defer out.Close()
	return treeCopier{ctx: ctx, dev: st.Dev}.copyDir(in, out, &st, ".", 0)
}

// maxCopyDepth bounds how deep a tree copyTree follows: each level holds two
// descriptors open, and no volume a workload writes nests this deep.
const maxCopyDepth = 1024

// entryTries is how often copyTree looks at an entry that changes between
// its stat and its open before it gives up on the copy; a volume in use
// rarely changes one name this often in a row.
const entryTries = 8

// errChanged says an entry was replaced between its stat and its open.
var errChanged = errors.New("replaced while it was opened")

// treeCopier copies one tree; dev is the source's device, which the copy
// never leaves.
type treeCopier struct {
	ctx context.Context
	dev uint64
}

// copyDir copies the entries of the open directory in, at rel below the
// source, into out; then gives out in's owner and permissions (last, so a
// read-only directory can be filled first) and syncs it.
func (c treeCopier) copyDir(in, out *os.File, st *unix.Stat_t, rel string, depth int) error {
	names, err := in.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("list %s: %w", rel, err)
	}
	for _, name := range names {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		if err := c.copyEntry(in, out, name, path.Join(rel, name), depth); err != nil {
			return err
		}
	}
	return finishCopy(out, st, rel)
}

// copyEntry copies the entry name of in (rel below the source) into out.
func (c treeCopier) copyEntry(in, out *os.File, name, rel string, depth int) error {
	e, err := openEntry(in, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed while the tree is copied: the copy is of a moment later
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", rel, err)
	}
	if e.f != nil {
		defer e.f.Close()
	}
	if e.st.Dev != c.dev {
		return fmt.Errorf("copy %s: another filesystem is mounted there, and a copy holds the volume's own data only", rel)
	}
	switch e.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if depth == maxCopyDepth {
			return fmt.Errorf("copy %s: nested deeper than %d directories", rel, maxCopyDepth)
		}
		sub, err := makeDirAt(int(out.Fd()), name)
		if err != nil {
			return fmt.Errorf("copy %s: %w", rel, err)
		}
		defer sub.Close()
		return c.copyDir(e.f, sub, &e.st, rel, depth+1)
	case unix.S_IFREG:
		return c.copyFile(e, out, name, rel)
	case unix.S_IFLNK:
		if err := unix.Symlinkat(e.link, int(out.Fd()), name); err != nil {
			return fmt.Errorf("copy %s: %w", rel, err)
		}
		_ = unix.Fchownat(int(out.Fd()), name, int(e.st.Uid), int(e.st.Gid), unix.AT_SYMLINK_NOFOLLOW)
		return nil
	}
	klog.FromContext(c.ctx).V(4).Info("Not copied: a device, socket or pipe is not data", "path", rel)
	return nil
}

// copyFile copies the regular file e as name into the directory out.
func (c treeCopier) copyFile(e entry, out *os.File, name, rel string) (err error) {
	fd, err := unix.Openat(int(out.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("copy %s: %w", rel, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("copy %s: %w", rel, cerr)
		}
	}()
	if err := copyContent(c.ctx, e.f, f, e.st.Size); err != nil {
		return fmt.Errorf("copy %s: %w", rel, err)
	}
	return finishCopy(f, &e.st, rel)
}

// entry is one entry of a source directory as copyTree found it: its stat,
// and the directory or regular file itself open for reading, or the target
// of a symlink. Other types are neither opened nor read.
type entry struct {
	st   unix.Stat_t
	f    *os.File
	link string
}

// openEntry opens the entry name of dir, looking again while it keeps being
// replaced between its stat and its open.
func openEntry(dir *os.File, name string) (entry, error) {
	for range entryTries {
		e, err := openEntryOnce(int(dir.Fd()), name)
		if !errors.Is(err, errChanged) {
			return e, err
		}
	}
	return entry{}, fmt.Errorf("it was replaced %d times between its stat and its open, the volume is too busy to copy now", entryTries)
}

func openEntryOnce(dir int, name string) (entry, error) {
	var e entry
	if err := unix.Fstatat(dir, name, &e.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return e, err
	}
	switch e.st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		link, err := readlinkAt(dir, name)
		if errors.Is(err, unix.EINVAL) {
			return e, errChanged // no longer a symlink
		}
		e.link = link
		return e, err
	case unix.S_IFDIR:
		return openSame(dir, name, unix.O_DIRECTORY, e)
	case unix.S_IFREG:
		// O_NONBLOCK, O_NOCTTY: should a pipe or terminal have been
		// swapped in after the stat, opening it neither waits nor adopts it.
		return openSame(dir, name, unix.O_NONBLOCK|unix.O_NOCTTY, e)
	}
	return e, nil
}

// openSame opens the entry name of dir for reading, without following a
// symlink, and keeps it only if it is the file e stat'ed.
func openSame(dir int, name string, flags int, e entry) (entry, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|flags, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return e, errChanged // now a symlink, or no longer a directory
	}
	if err != nil {
		return e, err
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	if err == nil && (st.Dev != e.st.Dev || st.Ino != e.st.Ino || st.Mode&unix.S_IFMT != e.st.Mode&unix.S_IFMT) {
		err = errChanged
	}
	if err == nil {
		err = unix.SetNonblock(fd, false)
	}
	if err != nil {
		unix.Close(fd)
		return e, err
	}
	e.st, e.f = st, os.NewFile(uintptr(fd), name)
	return e, nil
}

// readlinkAt reads the target of the symlink name in dir.
func readlinkAt(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// openDirAt opens the directory name in dir, not following a symlink.
func openDirAt(dir int, name string) (*os.File, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// makeDirAt creates the directory name in dir, private until finishCopy
// gives it its mode, and opens it.
func makeDirAt(dir int, name string) (*os.File, error) {
	if err := unix.Mkdirat(dir, name, 0o700); err != nil {
		return nil, &fs.PathError{Op: "mkdir", Path: name, Err: err}
	}
	return openDirAt(dir, name)
}

// finishCopy gives the copy f the owner of the original (where the driver
// may: otherwise the copy belongs to the driver, the best it can do), then
// its permissions (after the owner, which would clear set-id bits), and
// makes it durable.
func finishCopy(f *os.File, st *unix.Stat_t, rel string) error {
	fd := int(f.Fd())
	_ = unix.Fchown(fd, int(st.Uid), int(st.Gid))
	if err := unix.Fchmod(fd, st.Mode&0o777); err != nil {
		return fmt.Errorf("copy %s: %w", rel, err)
	}
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("copy %s: %w", rel, err)
	}
	return nil
}

// copyFileSparse copies the file src (one of the driver's own, as a block
// volume's) to a new file dst, keeping holes.
func copyFileSparse(ctx context.Context, src, dst string, perm fs.FileMode) (err error) {
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if err := copyContent(ctx, in, out, fi.Size()); err != nil {
		return err
	}
	if err := out.Chmod(perm); err != nil {
		return err
	}
	return out.Sync()
}

// copyContent makes the new file out size bytes long holding in's data,
// leaving holes where in has them.
func copyContent(ctx context.Context, in, out *os.File, size int64) error {
	if err := out.Truncate(size); err != nil {
		return err
	}
	return copyDataRanges(ctx, in, out, size)
}

// copyDataRanges copies the parts of in that hold data, found with
// SEEK_DATA/SEEK_HOLE; where the filesystem cannot tell, it copies all of in,
// still skipping zero chunks.
func copyDataRanges(ctx context.Context, in, out *os.File, size int64) error {
	for off := int64(0); off < size; {
		data, err := in.Seek(off, seekData)
		if errors.Is(err, syscall.ENXIO) {
			return nil // only a hole is left
		}
		if err != nil {
			return copyRange(ctx, in, out, off, size)
		}
		hole, err := in.Seek(data, seekHole)
		if err != nil {
			hole = size
		}
		if err := copyRange(ctx, in, out, data, hole); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

func copyRange(ctx context.Context, in, out *os.File, from, to int64) error {
	buf := make([]byte, copyChunk)
	zero := make([]byte, copyChunk)
	for off := from; off < to; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := in.ReadAt(buf[:min(int64(len(buf)), to-off)], off)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, werr := out.WriteAt(buf[:n], off); werr != nil {
				return werr
			}
		}
		off += int64(n)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}
