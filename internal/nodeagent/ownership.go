package nodeagent

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/volplane/volplane/internal/mounting"
)

// The kubelet's modes for a read-write volume given to an fsGroup: group
// read-write on every file, group search and setgid on every directory.
const (
	groupRW   fs.FileMode = 0o660
	groupExec fs.FileMode = 0o110
)

// applyOwnership changes the group and modes of everything under a
// published volume's target as the kubelet does (its VolumeOwnership):
// group first (a failure is not fatal there either), then the modes, never
// through a symlink; with OnRootMismatch, nothing if the root already has
// them.
func applyOwnership(dir string, o *mounting.Ownership) error {
	if o.OnRootMismatch && !needsOwnership(dir, o.GID) {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		_ = os.Lchown(path, -1, int(o.GID))
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mask := groupRW
		if d.IsDir() {
			mask |= fs.ModeSetgid | groupExec
		}
		_ = os.Chmod(path, info.Mode()|mask)
		return nil
	})
}

// needsOwnership says whether the root of a volume lacks the group, the
// modes or the setgid bit applyOwnership gives.
func needsOwnership(dir string, gid int64) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != gid || !info.IsDir() {
		return true
	}
	want := groupRW | groupExec
	return info.Mode().Perm()&want != want || info.Mode()&fs.ModeSetgid == 0
}
