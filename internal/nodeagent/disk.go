package nodeagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/mounting"
)

// onDisk is what a node root says is staged and published.
type onDisk struct {
	staged    []mounting.Staged
	published []mounting.Published
	podDirs   []types.UID
}

// scan reads every vol_data.json of a node root. A directory without one
// was not made by a stage or publish and is not ours to tear down.
func scan(l mounting.Layout) (onDisk, error) {
	var d onDisk
	drivers, err := readDirs(l.DriversDir())
	if err != nil {
		return d, err
	}
	for _, driver := range drivers {
		if driver == filepath.Base(l.DevicesDir()) {
			continue // the block layout, read below
		}
		vols, err := readDirs(filepath.Join(l.DriversDir(), driver))
		if err != nil {
			return d, err
		}
		for _, v := range vols {
			data, ok, err := readVolData(filepath.Join(l.DriversDir(), driver, v))
			if err != nil {
				return d, err
			}
			if ok {
				d.staged = append(d.staged, data.Staged(false))
			}
		}
	}
	if err := scanBlock(l, &d); err != nil {
		return d, err
	}
	return d, scanPods(l, &d)
}

// scanPods reads every pod's publication records.
func scanPods(l mounting.Layout, d *onDisk) error {
	pods, err := readDirs(l.PodsDir())
	if err != nil {
		return err
	}
	for _, uid := range pods {
		d.podDirs = append(d.podDirs, types.UID(uid))
		if err := scanPod(l, types.UID(uid), d); err != nil {
			return err
		}
	}
	return nil
}

// scanBlock reads the block volumes' records: <pv>/data/vol_data.json
// under the block layout's directory.
func scanBlock(l mounting.Layout, d *onDisk) error {
	vols, err := readDirs(l.DevicesDir())
	if err != nil {
		return err
	}
	for _, pv := range vols {
		if mounting.IsBlockLayoutDir(pv) {
			continue
		}
		data, ok, err := readVolData(l.BlockDataDir(pv))
		if err != nil {
			return err
		}
		if ok {
			d.staged = append(d.staged, data.Staged(true))
		}
	}
	return nil
}

// scanPod reads a pod's publication records, of mounted and of block
// volumes.
func scanPod(l mounting.Layout, uid types.UID, d *onDisk) error {
	for _, layout := range []struct {
		dir   string
		block bool
	}{{l.PodVolumesDir(uid), false}, {l.PodDevicesDir(uid), true}} {
		vols, err := readDirs(layout.dir)
		if err != nil {
			return err
		}
		for _, v := range vols {
			data, ok, err := readVolData(filepath.Join(layout.dir, v))
			if err != nil {
				return err
			}
			if ok {
				d.published = append(d.published, data.Published(uid, layout.block))
			}
		}
	}
	return nil
}

// readDirs lists the subdirectories of dir; a missing dir has none.
func readDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func readVolData(dir string) (mounting.VolData, bool, error) {
	var data mounting.VolData
	raw, err := os.ReadFile(filepath.Join(dir, mounting.VolDataFile))
	if errors.Is(err, fs.ErrNotExist) {
		return data, false, nil
	}
	if err != nil {
		return data, false, fmt.Errorf("read %s: %w", mounting.VolDataFile, err)
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		return data, false, fmt.Errorf("%s in %s: %w", mounting.VolDataFile, dir, err)
	}
	return data, true, nil
}

// writeVolData creates dir and writes its vol_data.json atomically: a
// crash leaves the old record or the new one, never half of one.
func writeVolData(dir string, data mounting.VolData) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, mounting.VolDataFile+".tmp")
	if err := os.WriteFile(tmp, raw, 0o640); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, mounting.VolDataFile)); err != nil {
		return fmt.Errorf("write %s: %w", mounting.VolDataFile, err)
	}
	return nil
}

// removeRecord removes a staging or publication record once its mount
// is undone: the mount point (a directory only if empty: a mount still
// there, or data under it, stops the removal instead of being deleted; a
// block volume's is the file the driver made, or nothing), the
// vol_data.json, then the record's directory. For a block volume, the
// mount point's directory and the record directory's parent go too once
// empty (the kubelet's cleanup of orphan device files).
func removeRecord(block bool, dir, mountPoint string) error {
	if err := removeEmpty(mountPoint); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, mounting.VolDataFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove record: %w", err)
	}
	if err := removeEmpty(dir); err != nil || !block {
		return err
	}
	removeIfEmpty(filepath.Dir(mountPoint))
	removeIfEmpty(filepath.Dir(dir))
	return nil
}

// removeIfEmpty removes a directory shared by several records once the
// last is gone; one still in use stays, silently.
func removeIfEmpty(dir string) { _ = os.Remove(dir) }

// removeEmptyTree removes dir and the empty directories under it, deepest
// first; anything else in it stops the removal with an error.
func removeEmptyTree(dir string) error {
	subs, err := readDirs(dir)
	if err != nil {
		return err
	}
	for _, s := range subs {
		if err := removeEmptyTree(filepath.Join(dir, s)); err != nil {
			return err
		}
	}
	return removeEmpty(dir)
}

func removeEmpty(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
