package hostpath

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
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
// where the driver may set it. Symlinks are copied as links, never followed,
// so the copy cannot reach outside src. Devices, sockets and pipes are
// skipped: they are not data. Files are fsync'ed, because a snapshot is
// acknowledged as soon as the copy returns.
func copyTree(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		copied, err := copyEntry(ctx, path, target, info.Mode())
		if copied {
			copyOwner(target, info)
		}
		return err
	})
}

// copyEntry copies one directory, regular file or symlink and reports
// whether it copied anything.
func copyEntry(ctx context.Context, path, target string, mode fs.FileMode) (bool, error) {
	switch {
	case mode.IsDir():
		if err := os.Mkdir(target, mode.Perm()); err != nil {
			return false, err
		}
		return true, os.Chmod(target, mode.Perm())
	case mode.IsRegular():
		return true, copyFileSparse(ctx, path, target, mode.Perm())
	case mode&fs.ModeSymlink != 0:
		link, err := os.Readlink(path)
		if err != nil {
			return false, err
		}
		return true, os.Symlink(link, target)
	}
	return false, nil
}

// copyOwner keeps the file's owner when the driver runs as root; otherwise
// the copy belongs to the driver, which is the best it can do.
func copyOwner(target string, info fs.FileInfo) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		_ = os.Lchown(target, int(st.Uid), int(st.Gid))
	}
}

// copyFileSparse copies src to a new file dst, keeping holes.
func copyFileSparse(ctx context.Context, src, dst string, perm fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if err := out.Truncate(fi.Size()); err != nil {
		return err
	}
	if err := copyDataRanges(ctx, in, out, fi.Size()); err != nil {
		return err
	}
	if err := out.Chmod(perm); err != nil {
		return err
	}
	return out.Sync()
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
