package hostpath

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

const (
	volumeIDPrefix   = "vol-"
	snapshotIDPrefix = "snap-"
	// idHexDigits is how much of sha256(name) an ID keeps: 128 bits, so two
	// names never meet in practice.
	idHexDigits = 32
	// blockSuffix marks a block volume's (or its snapshot's) backing file.
	blockSuffix = ".img"
	// mountVolumePerm lets a pod running as any user write into a fresh
	// volume, as with any empty directory volume; the volume is only
	// reachable through its bind mounts, DataDir itself is 0700.
	mountVolumePerm = 0o777
)

// layout knows where things live under DataDir:
//
//	state.json               the state: a snapshot (store.go)
//	state.journal            the changes since the snapshot
//	lock                     flock'ed by the running driver
//	volumes/vol-<hex>        a mount volume (directory)
//	volumes/vol-<hex>.img    a block volume (sparse file)
//	snapshots/snap-<hex>     a snapshot of a mount volume (directory)
//	snapshots/snap-<hex>.img a snapshot of a block volume (sparse file)
//	unrecorded/<time>-<n>/   volumes and snapshots found at start without a
//	                         record in the state, moved aside (see recovery.go)
type layout struct {
	root string
}

func (l layout) volumesDir() string    { return filepath.Join(l.root, "volumes") }
func (l layout) snapshotsDir() string  { return filepath.Join(l.root, "snapshots") }
func (l layout) statePath() string     { return filepath.Join(l.root, "state.json") }
func (l layout) lockPath() string      { return filepath.Join(l.root, "lock") }
func (l layout) unrecordedDir() string { return filepath.Join(l.root, "unrecorded") }

func volumeIDFor(name string) string   { return issueID(volumeIDPrefix, name) }
func snapshotIDFor(name string) string { return issueID(snapshotIDPrefix, name) }

func issueID(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:])[:idHexDigits]
}

// isIssuedID reports whether id has exactly the shape issueID gives: the
// prefix and lowercase hex digits. Only such IDs ever become paths.
func isIssuedID(prefix, id string) bool {
	digits, ok := strings.CutPrefix(id, prefix)
	if !ok || len(digits) != idHexDigits {
		return false
	}
	for _, c := range digits {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (l layout) volumePath(id string, t accessType) (string, error) {
	return dataPath(l.volumesDir(), volumeIDPrefix, id, t)
}

func (l layout) snapshotPath(id string, t accessType) (string, error) {
	return dataPath(l.snapshotsDir(), snapshotIDPrefix, id, t)
}

func dataPath(dir, prefix, id string, t accessType) (string, error) {
	if !isIssuedID(prefix, id) {
		return "", fmt.Errorf("%q is not an ID this driver issued", id)
	}
	if t == accessBlock {
		id += blockSuffix
	}
	return filepath.Join(dir, id), nil
}

// createData makes an empty volume at path, replacing whatever an earlier,
// unrecorded attempt left there.
func createData(path string, t accessType, size int64) error {
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	if t == accessMount {
		if err := os.Mkdir(path, mountVolumePerm); err != nil {
			return err
		}
		// Mkdir's mode is filtered by the umask; the volume must be writable as promised.
		if err := os.Chmod(path, mountVolumePerm); err != nil {
			return err
		}
		return syncDir(path) // its mode; the caller syncs its name in the parent
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyData makes dst a copy of src (a volume or a snapshot), grown to size
// for block volumes.
func copyData(ctx context.Context, src, dst string, t accessType, size int64) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if t == accessMount {
		return copyTree(ctx, src, dst)
	}
	if err := copyFileSparse(ctx, src, dst, 0o600); err != nil {
		return err
	}
	return resizeData(dst, t, size)
}

// resizeData grows a block volume's file, durably: the state records the
// new size once it returns. A mount volume is a directory and has no size
// of its own.
func resizeData(path string, t accessType, size int64) error {
	if t == accessMount {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() >= size {
		return nil
	}
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

// removeData deletes a volume or snapshot; a missing one is already deleted.
func removeData(path string) error {
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// usedBytes is what the data occupies on disk (allocated blocks, so a
// sparse file counts only what was written).
func usedBytes(path string) (int64, error) {
	var used int64
	err := filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			used += st.Blocks * 512
		}
		return nil
	})
	return used, err
}

// isTooLarge reports whether err says the filesystem cannot hold a file that big.
func isTooLarge(err error) bool {
	return errors.Is(err, syscall.EFBIG)
}

// inodeUsage is the inodes a directory's tree uses, against the total and
// free inodes of the filesystem holding it (a directory volume shares it).
func inodeUsage(path string) (*csi.VolumeUsage, error) {
	var used int64
	err := filepath.WalkDir(path, func(_ string, _ fs.DirEntry, err error) error {
		used++
		return err
	})
	if err != nil {
		return nil, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return nil, err
	}
	return &csi.VolumeUsage{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: used}, nil
}
