package csi

import (
	"context"
	"errors"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
)

// A node-local driver answers DeleteSnapshot with OK for an ID it never
// made: FindSnapshot must name the node that holds the snapshot, remember
// it, and say when none does.
func TestFindSnapshotNamesTheNodeThatHoldsIt(t *testing.T) {
	ctx := context.Background()
	var eps []*Endpoint
	for _, node := range []string{"node-a", "node-b"} {
		e, err := Dial(ctx, hostpathtest.Serve(t, node, 1<<30), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		eps = append(eps, e)
	}
	p := NewPool(eps...)
	vol, err := eps[1].CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := eps[1].CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: vol.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	id := snap.GetSnapshotId()
	e, got, err := p.FindSnapshot(ctx, hostpath.DriverName, id, nil)
	if err != nil || e != eps[1] || got.GetSnapshotId() != id {
		t.Fatalf("FindSnapshot = %v, %v, %v; want node-b's endpoint and the snapshot", e, got, err)
	}
	if p.homes.get(hostpath.DriverName, id) != eps[1] {
		t.Fatal("the endpoint found is not remembered")
	}
	if err := eps[1].DeleteSnapshot(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.FindSnapshot(ctx, hostpath.DriverName, id, nil); !errors.Is(err, ErrSnapshotNotFound) {
		t.Fatalf("FindSnapshot of a deleted snapshot: %v, want ErrSnapshotNotFound", err)
	}
	if p.homes.get(hostpath.DriverName, id) != nil {
		t.Fatal("a snapshot gone is still remembered")
	}
	if _, _, err := p.FindSnapshot(ctx, "other.driver", id, nil); !errors.Is(err, ErrDriverNotServed) {
		t.Fatalf("FindSnapshot of a driver not served: %v", err)
	}
	// One endpoint: it is the one, listed or not (its answer is the caller's).
	one := NewPool(eps[0])
	if e, got, err := one.FindSnapshot(ctx, hostpath.DriverName, "snap-none", nil); e != eps[0] || got != nil || err != nil {
		t.Fatalf("FindSnapshot with one endpoint = %v, %v, %v", e, got, err)
	}
	// Several endpoints of a driver that cannot list: nothing tells them apart.
	blind := NewPool(&Endpoint{Info: Info{Driver: "d", Controller: true}}, &Endpoint{Info: Info{Driver: "d", Controller: true}})
	if _, _, err := blind.FindSnapshot(ctx, "d", "x", nil); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("FindSnapshot without LIST_SNAPSHOTS on two endpoints: %v, want ErrAmbiguous", err)
	}
}
