package hostpath

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// clone is a deep copy: changing any map of the copy leaves the original
// as it was, and the copy encodes exactly as the original.
func TestStateCloneIsDeep(t *testing.T) {
	orig := emptyState()
	orig.Volumes["v"] = &volume{ID: "v", Name: "n", CapacityBytes: 1, AccessType: accessMount, CreatedAt: time.Unix(1, 0).UTC(),
		Attachments:       map[string]attachment{"node-1": {ReadOnly: true}},
		Stagings:          map[string]staging{"node-1": {Path: "/s"}},
		Publications:      map[string]publication{"/t": {Node: "node-1"}},
		LegacyStaging:     &staging{Path: "/old"},
		NodeSizes:         map[string]int64{"node-1": 1},
		MutableParameters: map[string]string{ParamTier: TierStandard},
	}
	orig.Snapshots["s"] = &snapshot{ID: "s", SourceVolumeID: "v", GroupSnapshotID: "g"}
	orig.GroupSnapshots["g"] = &groupSnapshot{ID: "g", SourceVolumeIDs: []string{"v"}, SnapshotIDs: []string{"s"}}
	before, _ := json.Marshal(orig)
	c := orig.clone()
	if got, _ := json.Marshal(c); string(got) != string(before) {
		t.Fatalf("clone encodes as\n%s\nwant\n%s", got, before)
	}
	v := c.Volumes["v"]
	v.Name = "changed"
	v.Attachments["node-2"] = attachment{}
	v.Stagings["node-2"] = staging{}
	v.Publications["/u"] = publication{}
	v.LegacyStaging.Path = "/changed"
	v.NodeSizes["node-2"] = 2
	v.MutableParameters[ParamTier] = TierPremium
	c.Snapshots["s"].SourceVolumeID = "changed"
	c.GroupSnapshots["g"].SourceVolumeIDs[0] = "changed"
	c.GroupSnapshots["g"].SnapshotIDs[0] = "changed"
	c.GroupSnapshots["h"] = &groupSnapshot{ID: "h"}
	c.Volumes["w"] = &volume{ID: "w"}
	if after, _ := json.Marshal(orig); string(after) != string(before) {
		t.Errorf("changing the clone changed the original:\n%s\nwas\n%s", after, before)
	}
	// A field added to volume later must be cloned too: this lists the
	// fields clone knows about.
	if n := reflect.TypeFor[volume]().NumField(); n != 13 {
		t.Errorf("volume has %d fields; check that clone copies every map, slice and pointer among them, then update this count", n)
	}
	if n := reflect.TypeFor[groupSnapshot]().NumField(); n != 5 {
		t.Errorf("groupSnapshot has %d fields; check that clone copies every slice among them, then update this count", n)
	}
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
	if st.Version != stateVersion || st.GroupSnapshots == nil || len(st.GroupSnapshots) != 0 || st.Snapshots["snap-1"].GroupSnapshotID != "" {
		t.Errorf("state = %+v, want version %d with no groups", st, stateVersion)
	}
}
