package attachment

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestSingleNodeVolumeAttachedElsewhereIsNotAttachedAgain(t *testing.T) {
	for name, tc := range map[string]struct {
		modes   []v1.PersistentVolumeAccessMode
		blocked bool
	}{
		"ReadWriteOnce":                  {[]v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, true},
		"ReadWriteOncePod":               {[]v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, true},
		"ReadWriteOnce and ReadOnlyMany": {[]v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany}, false},
		"ReadWriteMany":                  {[]v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, false},
		"no access modes":                {[]v1.PersistentVolumeAccessMode{}, false},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld()
			pv := w.volume("data")
			pv.Spec.AccessModes = tc.modes
			w.pod("app", node, "data")
			w.attachment("data", "node-2", true)
			p := Decide(w.f)
			if tc.blocked != (len(p.Create) == 0) {
				t.Fatalf("create %v, want blocked %v", p.Create, tc.blocked)
			}
			if tc.blocked && !slices.Equal(reasons(p), []WaitReason{MultiAttach}) {
				t.Errorf("waits %v, want MultiAttach", reasons(p))
			}
		})
	}
}

func TestMultiAttachEventNamesThePodsHoldingTheVolumeInTheSameNamespaceOnly(t *testing.T) {
	w := newWorld()
	w.volume("data")
	w.pod("app", node, "data")
	w.attachment("data", "node-2", true)
	prefix := `Waiting for detach for volume "pv-data" `
	check := func(want string) {
		t.Helper()
		p := Decide(w.f)
		if len(p.Events) != 1 || p.Events[0].Message != prefix+want || p.Events[0].Reason != FailedAttachVolume ||
			p.Events[0].Type != v1.EventTypeWarning {
			t.Fatalf("events %+v, want %q", p.Events, prefix+want)
		}
	}
	check("Volume is already exclusively attached to one node, waiting on detach before it can be attached to another node")
	other := w.pod("db", "node-2", "data")
	other.Namespace = "elsewhere"
	check("Volume is already used by 1 pod(s) in different namespaces")
	w.pod("web-1", "node-2", "data")
	w.pod("web-2", "node-2", "data")
	check("Volume is already used by pod(s) web-1, web-2 and 1 pod(s) in different namespaces")
	w.f.Users["pv-data"] = w.f.Users["pv-data"][2:] // only web-1, web-2 left
	check("Volume is already used by pod(s) web-1, web-2")
	w.pod("unrelated", "node-3", "data") // a pod on a node that does not hold the volume
	check("Volume is already used by pod(s) web-1, web-2")
}

// Two PersistentVolumes naming one backend volume (a PV made again for a
// retained disk) are one volume: attached to node-2 through one of them,
// it is not attached to node-1 through the other. The reference keys its
// desired and actual state by the unique volume name, not the PV name.
func TestVolumeAttachedElsewhereThroughAnotherPVIsNotAttachedAgain(t *testing.T) {
	w := newWorld()
	w.volume("old")
	again := w.volume("new")
	again.Spec.CSI.VolumeHandle = "h-old"
	holder := w.pod("db", "node-2", "old")
	w.pod("app", node, "new")
	w.attachment("old", "node-2", true)
	p := Decide(w.f)
	if len(p.Create) != 0 || !slices.Equal(reasons(p), []WaitReason{MultiAttach}) {
		t.Fatalf("create %d waits %v, want a MultiAttach wait", len(p.Create), reasons(p))
	}
	want := `Waiting for detach for volume "pv-new" Volume is already used by pod(s) ` + holder.Name
	if len(p.Events) != 1 || p.Events[0].Message != want {
		t.Errorf("events %+v, want %q", p.Events, want)
	}
}

// Two pods of one node using two PVs of one volume need one attachment,
// reported once.
func TestTwoPVsOfOneVolumeOnOneNodeAreOneAttachment(t *testing.T) {
	w := newWorld()
	w.volume("old")
	again := w.volume("new")
	again.Spec.CSI.VolumeHandle = "h-old"
	w.pod("a", node, "old")
	w.pod("b", node, "new")
	if p := Decide(w.f); len(p.Create) != 1 {
		t.Fatalf("create %d, want 1", len(p.Create))
	}
	w.attachment("old", node, true)
	p := Decide(w.f)
	if len(p.Create) != 0 || len(p.Detach) != 0 || len(p.VolumesAttached) != 1 {
		t.Errorf("create %d detach %d volumesAttached %v, want the one attachment reported once", len(p.Create), len(p.Detach), p.VolumesAttached)
	}
}
