package hostpath

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// What a starting driver does with volume and snapshot data on disk that the
// state does not record.
//
// The state file is the only record of a volume's name, size, content
// source, attachments, staging and publications; none of it can be read
// back from the data (an ID is a hash of the name; a mount volume is a bare
// directory). So the driver never rebuilds a state from the disk, and it
// never deletes data it has no record of:
//
//   - no state file, but volumes or snapshots on disk: the state was lost;
//     the driver refuses to start and says how to recover.
//   - a state file, and data it does not record (a creation that died before
//     recording, or a state restored from an older backup): the data is moved
//     under DataDir/unrecorded and reported, never removed.

// dataEntry is one volume or snapshot found on disk.
type dataEntry struct {
	// dir is "volumes" or "snapshots", relative to DataDir.
	dir string
	// name is the file or directory name: an ID, with blockSuffix for block data.
	name string
}

func (e dataEntry) id() string                { return strings.TrimSuffix(e.name, blockSuffix) }
func (e dataEntry) String() string            { return e.dir + "/" + e.name }
func (e dataEntry) inRoot(root string) string { return filepath.Join(root, e.dir, e.name) }

// movedAside is what open moved under unrecorded/, for the log.
type movedAside struct {
	dir     string
	entries []dataEntry
}

// dataEntries lists what volumes/ and snapshots/ hold under names this
// driver issues; other names are not its data and are left alone.
func (l layout) dataEntries() ([]dataEntry, error) {
	var found []dataEntry
	for _, d := range []struct{ name, prefix string }{{"volumes", volumeIDPrefix}, {"snapshots", snapshotIDPrefix}} {
		entries, err := os.ReadDir(filepath.Join(l.root, d.name))
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", d.name, err)
		}
		for _, e := range entries {
			entry := dataEntry{dir: d.name, name: e.Name()}
			if isIssuedID(d.prefix, entry.id()) {
				found = append(found, entry)
			}
		}
	}
	return found, nil
}

// lostStateProblem says why a driver must not start when the state file is
// missing while data is on disk, or "" when it may start.
func lostStateProblem(stateFound bool, onDisk []dataEntry, dataDir string) string {
	if stateFound || len(onDisk) == 0 {
		return ""
	}
	return fmt.Sprintf("data dir %s holds %d volumes and snapshots (%s) but no state file: the state is the only record "+
		"of their names, sizes and mounts, so the driver does not start without it. Restore %s from a backup; or, "+
		"to start with no volumes, move the volumes and snapshots directories out of %s (their data stays wherever "+
		"you move it)", dataDir, len(onDisk), entryList(onDisk), filepath.Join(dataDir, "state.json"), dataDir)
}

// unrecorded returns the entries st does not record.
func unrecorded(st *state, onDisk []dataEntry) []dataEntry {
	var out []dataEntry
	for _, e := range onDisk {
		vol := st.Volumes.Get(e.id()) != nil
		snap := st.Snapshots.Get(e.id()) != nil
		if !vol && !snap {
			out = append(out, e)
		}
	}
	return out
}

// entryList names at most a few entries, for a message.
func entryList(entries []dataEntry) string {
	const most = 5
	names := make([]string, 0, most)
	for i, e := range entries {
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(entries)-most))
			break
		}
		names = append(names, e.String())
	}
	return strings.Join(names, ", ")
}

// setAside moves entries into a new directory under unrecorded/ and returns
// it. Moving keeps the data and frees the IDs: a CreateVolume of the same
// name then starts from nothing, as it must.
func (l layout) setAside(entries []dataEntry, now time.Time) (string, error) {
	if err := os.MkdirAll(l.unrecordedDir(), 0o700); err != nil {
		return "", fmt.Errorf("set aside unrecorded data: %w", err)
	}
	dir, err := os.MkdirTemp(l.unrecordedDir(), now.UTC().Format("20060102T150405Z")+"-")
	if err != nil {
		return "", fmt.Errorf("set aside unrecorded data: %w", err)
	}
	for _, e := range entries {
		if err := os.MkdirAll(filepath.Join(dir, e.dir), 0o700); err != nil {
			return dir, fmt.Errorf("set aside unrecorded data: %w", err)
		}
		if err := os.Rename(e.inRoot(l.root), e.inRoot(dir)); err != nil {
			return dir, fmt.Errorf("set aside unrecorded %s: %w", e, err)
		}
	}
	if err := l.syncSetAside(dir, entries); err != nil {
		return dir, fmt.Errorf("set aside unrecorded data: %w", err)
	}
	return dir, nil
}

// syncSetAside makes a setAside into dir durable: each rename in both the
// directory it left and the one it entered, and every directory setAside
// may have created in its parent, deepest first, so that after a crash the
// data is either where it was or wholly under dir, and dir reachable.
func (l layout) syncSetAside(dir string, entries []dataEntry) error {
	var dirs []string
	for _, e := range entries {
		into := filepath.Join(dir, e.dir)
		if !slices.Contains(dirs, into) {
			dirs = append(dirs, into)
		}
	}
	dirs = append(dirs, dir, l.unrecordedDir(), l.root, l.volumesDir(), l.snapshotsDir())
	for _, d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}
