package hostpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A driver that died while writing a snapshot of the state, or a new
// journal, leaves the temporary file of that write beside state.json or
// state.journal. The next start removes it (it never became the state, so
// nothing is lost), keeps the state, and leaves alone files the driver
// never names.
func TestCrashedStateWritesAreRemovedAtStart(t *testing.T) {
	cfg, id := dataDirWithAVolume(t)
	crashed := []string{
		filepath.Join(cfg.DataDir, ".state.json.tmp-123456"),
		filepath.Join(cfg.DataDir, ".state.json.tmp-987654"),
		filepath.Join(cfg.DataDir, ".state.journal.tmp-123456"),
	}
	for _, p := range crashed {
		if err := os.WriteFile(p, []byte(`{"version": 3, "volu`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	strangers := []string{
		filepath.Join(cfg.DataDir, "state.json.tmp-1"),
		filepath.Join(cfg.DataDir, ".state.json.bak"),
		filepath.Join(cfg.DataDir, "state.journal.tmp-1"),
		filepath.Join(cfg.DataDir, "volumes", ".state.json.tmp-1"),
	}
	for _, p := range strangers {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A directory of that name is not a write the driver made.
	dirLike := filepath.Join(cfg.DataDir, ".state.json.tmp-dir")
	if err := os.Mkdir(dirLike, 0o700); err != nil {
		t.Fatal(err)
	}
	strangers = append(strangers, dirLike)

	r := startDriver(t, cfg)
	r.stop(t)
	for _, p := range crashed {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("crashed state write %s is still there: %v", filepath.Base(p), err)
		}
	}
	for _, p := range strangers {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s, which the driver never writes, is gone: %v", p, err)
		}
	}
	st, found, err := readState(filepath.Join(cfg.DataDir, "state.json"))
	if err != nil || !found || st.Volumes.Get(id) == nil {
		t.Fatalf("state after the restart: found %v, %v; want it to hold volume %s", found, err, id)
	}
	wantVolumeData(t, cfg.DataDir, id)
}
