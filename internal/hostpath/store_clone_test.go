package hostpath

import (
	"encoding/json"
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
	orig.Snapshots["s"] = &snapshot{ID: "s", SourceVolumeID: "v"}
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
	c.Volumes["w"] = &volume{ID: "w"}
	if after, _ := json.Marshal(orig); string(after) != string(before) {
		t.Errorf("changing the clone changed the original:\n%s\nwas\n%s", after, before)
	}
	// A field added to volume later must be cloned too: this lists the
	// fields clone knows about.
	if n := reflect.TypeFor[volume]().NumField(); n != 13 {
		t.Errorf("volume has %d fields; check that clone copies every map, slice and pointer among them, then update this count", n)
	}
}
