package conformance

import (
	"context"
	"slices"
	"testing"

	"github.com/volplane/volplane/internal/csi"
)

// Select is pure: the Lab's facts alone decide, and every skip says which
// capability is missing.
func TestSelect(t *testing.T) {
	bare := &Lab{ImmediateClass: "fast"}
	full := &Lab{
		ImmediateClass: "fast", WaitClass: "wffc", SnapshotClass: "snaps", GroupSnapshotClass: "groups", AttributesClass: "gold",
		Block:   true,
		Restart: func(context.Context, string) error { return nil },
		Faults:  func(bool) {}, InjectedFaults: func() int64 { return 0 },
		NodeDown: func(context.Context, string, bool) error { return nil },
		Controller: csi.Info{ControllerExpand: true, Modify: true, Clone: true, Snapshot: true, GroupSnapshot: true,
			OnlineExpansion: true},
	}
	full.Snapshots = nil // the snapshot scenarios need the snapshot API too
	cases := []struct {
		name    string
		lab     *Lab
		run     []string
		skipped map[string]string
	}{
		{"a driver that only provisions", bare,
			[]string{"dynamic-provisioning-mount", "static-provisioning-retain"},
			map[string]string{
				"wait-for-first-consumer":  "no WaitForFirstConsumer StorageClass of the driver",
				"raw-block":                "the driver is not said to take raw block volumes (Lab.Block)",
				"access-modes":             "the driver is said to support one access mode only (Lab.AccessModes), which every scenario uses",
				"expansion-offline":        "the driver's controller cannot expand volumes (no EXPAND_VOLUME)",
				"expansion-online":         "the driver cannot expand volumes (no EXPAND_VOLUME, controller or node)",
				"modify-volume-attributes": "the driver cannot modify volumes (no MODIFY_VOLUME)",
				"clone":                    "the driver cannot clone volumes (no CLONE_VOLUME)",
				"snapshot-restore":         "the driver cannot snapshot (no CREATE_DELETE_SNAPSHOT)",
				"group-snapshot":           "the driver cannot snapshot groups (no GroupController CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT)",
				"controller-killed":        "the driver was not started by volplane",
				"node-plugin-killed":       "the driver was not started by volplane",
				"faults":                   "no fault proxy in front of the driver",
				"node-failure":             "the lab cannot take a node down",
			}},
		{"a driver that does everything, without the snapshot API", full,
			[]string{"dynamic-provisioning-mount", "wait-for-first-consumer", "static-provisioning-retain", "raw-block",
				"expansion-offline", "expansion-online", "modify-volume-attributes", "clone", "controller-killed", "node-plugin-killed", "faults"},
			map[string]string{
				"access-modes":     "the driver is said to support one access mode only (Lab.AccessModes), which every scenario uses",
				"snapshot-restore": "no VolumeSnapshotClass of the driver",
				"group-snapshot":   "no VolumeGroupSnapshotClass of the driver",
				"node-failure":     "the lab has one node: the volume has nowhere to move",
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, skipped := Select(c.lab)
			var names []string
			for _, s := range run {
				names = append(names, s.Name)
			}
			if !slices.Equal(names, c.run) {
				t.Errorf("run %v, want %v", names, c.run)
			}
			got := map[string]string{}
			for _, s := range skipped {
				got[s.Name] = s.Why
			}
			if len(got) != len(c.skipped) {
				t.Errorf("skipped %v, want %v", got, c.skipped)
			}
			for name, why := range c.skipped {
				if got[name] != why {
					t.Errorf("%s skipped because %q, want %q", name, got[name], why)
				}
			}
		})
	}
}

// The node-failure scenario needs a second node and a driver that
// attaches: the forced detach is what the out-of-service taint is for.
func TestNodeFailureNeedsTwoNodesAndAttach(t *testing.T) {
	lab := &Lab{NodeDown: func(context.Context, string, bool) error { return nil }, Nodes: []string{"node-1", "node-2"}}
	if ok, why := nodeFailure().Applies(lab); ok || why != "the driver does not attach volumes (no PUBLISH_UNPUBLISH_VOLUME): nothing to detach by force" {
		t.Errorf("a driver that does not attach: %v %q", ok, why)
	}
	lab.Controller.Publish = true
	if ok, why := nodeFailure().Applies(lab); !ok {
		t.Errorf("two nodes, a driver that attaches: skipped, %q", why)
	}
}

// An offline-only driver is not run online.
func TestOnlineExpansionNeedsOnline(t *testing.T) {
	lab := &Lab{Controller: csi.Info{ControllerExpand: true, OfflineExpansion: true}}
	if ok, why := onlineExpansion().Applies(lab); ok || why != "the driver expands offline only (VolumeExpansion OFFLINE)" {
		t.Errorf("online expansion of an offline-only driver: %v %q", ok, why)
	}
	lab.Controller.OfflineExpansion = false
	if ok, _ := onlineExpansion().Applies(lab); !ok {
		t.Error("a driver reporting no expansion mode is taken as online")
	}
}
