package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// dataDirWithAVolume runs a driver once to create a volume holding a file,
// and stops it. It returns the config and the volume's ID.
func dataDirWithAVolume(t *testing.T) (Config, string) {
	t.Helper()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	r := startDriver(t, cfg)
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("precious"))).Volume
	writeVolumeFile(t, cfg.DataDir, vol.VolumeId, "data", "keep me")
	r.stop(t)
	return cfg, vol.VolumeId
}

// startError runs a driver that should refuse to start and returns why. A
// driver that starts after all stops at once, as its context is done, and
// returns nil.
func startError(t *testing.T, cfg Config) error {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return d.Run(ctx)
}

func wantErrorSaying(t *testing.T, err error, phrases ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the driver started, want it to refuse saying %q", phrases)
	}
	for _, p := range phrases {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

func wantVolumeData(t *testing.T, dataDir, id string) {
	t.Helper()
	if got := readVolumeFile(t, dataDir, id, "data"); got != "keep me" {
		t.Errorf("volume data = %q, want it intact", got)
	}
}

func moveFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// TestMissingStateWithVolumesOnDiskRefusesToStart: the state file is gone
// while a volume is on disk. The driver must not start (it would start
// empty and later reuse or remove the volume's data), must keep the data,
// and starts normally once the file is restored.
func TestMissingStateWithVolumesOnDiskRefusesToStart(t *testing.T) {
	cfg, id := dataDirWithAVolume(t)
	statePath := filepath.Join(cfg.DataDir, "state.json")
	backup := filepath.Join(filepath.Dir(cfg.DataDir), "state.json.bak")
	moveFile(t, statePath, backup)

	wantErrorSaying(t, startError(t, cfg), "no state file", "volumes/"+id, "Restore "+statePath)
	wantVolumeData(t, cfg.DataDir, id)
	if _, err := os.Stat(statePath); err == nil {
		t.Error("refusing to start wrote a state file")
	}

	moveFile(t, backup, statePath)
	r := startDriver(t, cfg)
	vols := must[*csi.ListVolumesResponse](t)(r.controller.ListVolumes(context.Background(), &csi.ListVolumesRequest{}))
	if len(vols.Entries) != 1 || vols.Entries[0].Volume.VolumeId != id {
		t.Errorf("volumes with the state restored: %v, want just %s", vols.Entries, id)
	}
	wantVolumeData(t, cfg.DataDir, id)
}

// TestDamagedStateKeepsVolumeData: a state file that cannot be parsed stops
// the driver with advice that is safe to follow, and nothing is removed.
func TestDamagedStateKeepsVolumeData(t *testing.T) {
	cfg, id := dataDirWithAVolume(t)
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "state.json"), []byte(`{"volumes": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := startError(t, cfg)
	wantErrorSaying(t, err, "is damaged", "restore it from a backup", "together with the volumes and snapshots directories")
	if strings.Contains(err.Error(), "move it away to start empty") {
		t.Errorf("error %q still advises moving the state file alone", err)
	}
	wantVolumeData(t, cfg.DataDir, id)
}

// TestStateMovedAwayAsAdvisedKeepsVolumeData follows the advice for a
// damaged state file both ways people read it. Moving the state file alone
// (what the driver once advised) leaves the data without a record: the
// driver refuses to start and keeps it. Moving the state file with the
// volumes and snapshots directories but not the journal leaves a journal
// without its state file, which the driver refuses too. Moving both files
// with the directories, as advised now, starts an empty driver and the
// data is where it was moved.
func TestStateMovedAwayAsAdvisedKeepsVolumeData(t *testing.T) {
	cfg, id := dataDirWithAVolume(t)
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "state.json"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantErrorSaying(t, startError(t, cfg), "is damaged")

	away := filepath.Join(filepath.Dir(cfg.DataDir), "moved-away")
	if err := os.Mkdir(away, 0o700); err != nil {
		t.Fatal(err)
	}
	moveFile(t, filepath.Join(cfg.DataDir, "state.json"), filepath.Join(away, "state.json"))
	wantErrorSaying(t, startError(t, cfg), "no state file")
	wantVolumeData(t, cfg.DataDir, id)
	// The journal left behind continues the state moved away: starting
	// anew would overwrite it.
	for _, dir := range []string{"volumes", "snapshots"} {
		moveFile(t, filepath.Join(cfg.DataDir, dir), filepath.Join(away, dir))
	}
	wantErrorSaying(t, startError(t, cfg), "state journal", "but no state file", "move the journal out")
	moveFile(t, filepath.Join(cfg.DataDir, "state.journal"), filepath.Join(away, "state.journal"))

	r := startDriver(t, cfg)
	vols := must[*csi.ListVolumesResponse](t)(r.controller.ListVolumes(context.Background(), &csi.ListVolumesRequest{}))
	if len(vols.Entries) != 0 {
		t.Errorf("volumes after starting empty: %v, want none", vols.Entries)
	}
	wantVolumeData(t, away, id)
}
