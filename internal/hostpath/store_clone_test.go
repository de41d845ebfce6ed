package hostpath

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// A volume's clone is deep: changing any map of the copy leaves the
// original as it was, and the copy encodes exactly as the original.
func TestVolumeCloneIsDeep(t *testing.T) {
	orig := &volume{ID: "v", Name: "n", CapacityBytes: 1, AccessType: accessMount, CreatedAt: time.Unix(1, 0).UTC(),
		Attachments:       map[string]attachment{"node-1": {ReadOnly: true}},
		Stagings:          map[string]staging{"node-1": {Path: "/s"}},
		Publications:      map[string]publication{"/t": {Node: "node-1"}},
		LegacyStaging:     &staging{Path: "/old"},
		NodeSizes:         map[string]int64{"node-1": 1},
		MutableParameters: map[string]string{ParamTier: TierStandard},
	}
	before, _ := json.Marshal(orig)
	v := orig.clone()
	if got, _ := json.Marshal(v); string(got) != string(before) {
		t.Fatalf("clone encodes as\n%s\nwant\n%s", got, before)
	}
	v.Name = "changed"
	v.Attachments["node-2"] = attachment{}
	v.Stagings["node-2"] = staging{}
	v.Publications["/u"] = publication{}
	v.LegacyStaging.Path = "/changed"
	v.NodeSizes["node-2"] = 2
	v.MutableParameters[ParamTier] = TierPremium
	if after, _ := json.Marshal(orig); string(after) != string(before) {
		t.Errorf("changing the clone changed the original:\n%s\nwas\n%s", after, before)
	}
	// A field added to volume later must be cloned too: this lists the
	// fields clone knows about.
	if n := reflect.TypeFor[volume]().NumField(); n != 13 {
		t.Errorf("volume has %d fields; check that clone copies every map, slice and pointer among them, then update this count", n)
	}
}

// An update changes a copy of the state: the state readers hold, and the
// records in it, stay as they were, whatever the update does.
func TestUpdateLeavesTheReadersStateAlone(t *testing.T) {
	s, _, err := loadStore(filepath.Join(t.TempDir(), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	put := func(st *state) error {
		st.Volumes.Put("v", &volume{ID: "v", Attachments: map[string]attachment{"node-1": {}}})
		st.Snapshots.Put("s", &snapshot{ID: "s", SourceVolumeID: "v"})
		st.GroupSnapshots.Put("g", &groupSnapshot{ID: "g", SnapshotIDs: []string{"s"}})
		return nil
	}
	if err := s.update(put); err != nil {
		t.Fatal(err)
	}
	held := s.current()
	before, _ := json.Marshal(held)
	err = s.update(func(st *state) error {
		v := st.editVolume("v")
		v.Attachments["node-2"] = attachment{}
		v.Name = "changed"
		st.Snapshots.Delete("s")
		st.GroupSnapshots.Delete("g")
		st.Volumes.Put("w", &volume{ID: "w"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(held); string(after) != string(before) {
		t.Errorf("an update changed the state a reader holds:\n%s\nwas\n%s", after, before)
	}
	now := s.current()
	if now.Volumes.Get("v").Name != "changed" || now.Volumes.Len() != 2 || now.Snapshots.Len() != 0 {
		t.Errorf("state after the update = %s", mustJSON(t, now))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A version 3 state file, from before group snapshots, reads as is: its
// snapshots are of no group, and there are no groups.
func TestVersion3StateReadsWithoutGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	v3 := `{"version": 3, "volumes": {}, "snapshots": {"snap-1": {"id": "snap-1", "sourceVolumeID": "vol-1", "sizeBytes": 1, "accessType": "mount"}}}`
	if err := os.WriteFile(path, []byte(v3), 0o600); err != nil {
		t.Fatal(err)
	}
	st, found, err := readState(path)
	if err != nil || !found {
		t.Fatalf("readState: %v, %v", found, err)
	}
	if st.Version != stateVersion || st.GroupSnapshots.Len() != 0 || st.Snapshots.Get("snap-1").GroupSnapshotID != "" {
		t.Errorf("state = %+v, want version %d with no groups", st, stateVersion)
	}
}
