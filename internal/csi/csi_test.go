package csi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
)

func TestDialProbesTheHostpathDriver(t *testing.T) {
	endpoint := hostpathtest.Serve(t, "node-a", 1<<30)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Dial(context.Background(), endpoint, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	want := Info{Driver: hostpath.DriverName, Controller: true, Accessibility: true, Clone: true, List: true, GetCapacity: true, SingleNodeMultiWriter: true,
		ControllerExpand: true, Modify: true, Snapshot: true, ListSnapshots: true, GetSnapshot: true, GroupSnapshot: true, OnlineExpansion: true,
		VolumeHealth: true, ListVolumeHealth: true, NodeVolumeHealth: true, StorageHealth: true,
		Node: true, NodeID: "node-a", Stage: true, Expand: true, NodeSingleNodeMultiWriter: true, VolumeStats: true,
		Topology: map[string]string{hostpath.TopologyKey: "node-a"}}
	if fmt.Sprint(e.Info) != fmt.Sprint(want) {
		t.Errorf("Info = %+v, want %+v", e.Info, want)
	}

	ctx := context.Background()
	req := &csi.CreateVolumeRequest{Name: "pvc-1", CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}}
	v1, err := e.CreateVolume(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := e.CreateVolume(ctx, req)
	if err != nil || v2.GetVolumeId() != v1.GetVolumeId() {
		t.Fatalf("second CreateVolume = %v, %v; want the same volume %s", v2, err, v1.GetVolumeId())
	}
	list, err := e.ListVolumes(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListVolumes = %v, %v; want one volume", list, err)
	}
	if err := e.DeleteVolume(ctx, v1.GetVolumeId(), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteVolume(ctx, v1.GetVolumeId(), nil); err != nil && !csierror.NotFound(err) {
		t.Fatalf("second DeleteVolume: %v", err)
	}

	other := &csi.CreateVolumeRequest{Name: "pvc-2", CapacityRange: req.CapacityRange, VolumeCapabilities: req.VolumeCapabilities,
		AccessibilityRequirements: &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{hostpath.TopologyKey: "node-b"}}}}}
	_, err = e.CreateVolume(ctx, other)
	if status.Code(err) != codes.ResourceExhausted || csierror.Classify(err) != csierror.ClassFinal {
		t.Errorf("CreateVolume for another node: %v (%s), want final ResourceExhausted", err, csierror.Classify(err))
	}
	if got, _ := reg.Gather(); len(got) != 1 || got[0].GetName() != "csi_sidecar_operations_seconds" {
		t.Errorf("metrics gathered: %v", got)
	}
}

func TestDialSeesTheAttachStep(t *testing.T) {
	e, err := Dial(context.Background(), hostpathtest.ServeAttachRequired(t, "node-a", 1<<30), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !e.Info.Publish {
		t.Errorf("Info = %+v: an attach-required driver has PUBLISH_UNPUBLISH_VOLUME", e.Info)
	}
}

// The network driver serves its controller on one socket and each node's
// node service on a socket of its own, without the controller service: the
// probe tells them apart instead of failing on the node sockets.
func TestDialProbesTheNetworkDriversControllerAndNodeSockets(t *testing.T) {
	controller, nodes := hostpathtest.ServeNetwork(t, 1<<30, "node-a", "node-b")
	c, err := Dial(context.Background(), controller, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := Info{Driver: hostpath.NetworkDriverName, Controller: true, Clone: true, List: true, GetCapacity: true, Publish: true, PublishReadOnly: true, SingleNodeMultiWriter: true,
		ControllerExpand: true, Modify: true, Snapshot: true, ListSnapshots: true, GetSnapshot: true, GroupSnapshot: true, OnlineExpansion: true,
		VolumeHealth: true, ListVolumeHealth: true}
	if fmt.Sprint(c.Info) != fmt.Sprint(want) {
		t.Errorf("controller Info = %+v, want %+v", c.Info, want)
	}
	n, err := Dial(context.Background(), nodes["node-b"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	want = Info{Driver: hostpath.NetworkDriverName, OnlineExpansion: true, Node: true, NodeID: "node-b", Stage: true, Expand: true,
		NodeSingleNodeMultiWriter: true, VolumeStats: true, NodeVolumeHealth: true, StorageHealth: true}
	if fmt.Sprint(n.Info) != fmt.Sprint(want) || !n.NodeOnly() || c.NodeOnly() {
		t.Errorf("node Info = %+v, want %+v (node only)", n.Info, want)
	}

	p := NewPool(n, c)
	if got := p.Endpoints(hostpath.NetworkDriverName); len(got) != 1 || got[0] != c {
		t.Errorf("pool endpoints = %v, want the controller's only", got)
	}
	if got := p.ForCreate(hostpath.NetworkDriverName, nil); got != c {
		t.Errorf("ForCreate = %v, want the controller", got)
	}
	if got, err := p.ForDelete(hostpath.NetworkDriverName, nil); got != c || err != nil {
		t.Errorf("ForDelete = %v, %v; want the controller", got, err)
	}
	if only := NewPool(n); only.Serves(hostpath.NetworkDriverName) || len(only.Drivers()) != 0 {
		t.Errorf("a pool of node sockets only serves %v, want no driver", only.Drivers())
	}
}

func TestDialNamesAMissingSocket(t *testing.T) {
	for _, addr := range []string{"unix:///nonexistent/csi.sock", "tcp://127.0.0.1:1", "unix://relative.sock"} {
		_, err := Dial(context.Background(), addr, nil)
		if err == nil || !strings.Contains(err.Error(), addr) {
			t.Errorf("Dial(%s) = %v, want an error naming it", addr, err)
		}
	}
}

func TestPoolChoosesDeterministically(t *testing.T) {
	ep := func(addr, driver, node string) *Endpoint {
		e := &Endpoint{Address: addr, Info: Info{Driver: driver}}
		if node != "" {
			e.Info.Topology = map[string]string{"zone": node}
		}
		return e
	}
	p := NewPool(ep("none", "d", ""), ep("a", "d", "a"), ep("b", "d", "b"), ep("x", "other", "a"))
	seg := func(n string) *csi.Topology { return &csi.Topology{Segments: map[string]string{"zone": n}} }
	for _, tc := range []struct {
		name string
		req  *csi.TopologyRequirement
		want string
	}{
		{"no requirements: first", nil, "none"},
		{"first preferred", &csi.TopologyRequirement{Requisite: []*csi.Topology{seg("a"), seg("b")}, Preferred: []*csi.Topology{seg("b"), seg("a")}}, "b"},
		{"requisite when no preferred matches", &csi.TopologyRequirement{Requisite: []*csi.Topology{seg("c"), seg("a")}, Preferred: []*csi.Topology{seg("c")}}, "a"},
		{"nothing matches: first", &csi.TopologyRequirement{Requisite: []*csi.Topology{seg("c")}}, "none"},
	} {
		if got := p.ForCreate("d", tc.req); got.Address != tc.want {
			t.Errorf("%s: ForCreate = %s, want %s", tc.name, got.Address, tc.want)
		}
	}
	if p.ForCreate("missing", nil) != nil || p.Serves("missing") || !p.Serves("other") {
		t.Error("a driver not served must have no endpoint")
	}
	if got := p.TopologyKeys("d"); fmt.Sprint(got) != "[zone]" {
		t.Errorf("TopologyKeys = %v", got)
	}
}

// A volume is deleted only through the driver instance that can hold it:
// never through another node's, which would answer NotFound (or OK) for an
// ID it never made, so the PV would go and the data stay.
func TestDeleteGoesOnlyToTheEndpointThatCanHoldTheVolume(t *testing.T) {
	ep := func(addr, zone string) *Endpoint {
		e := &Endpoint{Address: addr, Info: Info{Driver: "d"}}
		if zone != "" {
			e.Info.Topology = map[string]string{"zone": zone}
		}
		return e
	}
	in := func(zone string) func(map[string]string) bool {
		return func(seg map[string]string) bool { return seg["zone"] == zone }
	}
	nodes := []*Endpoint{ep("a", "a"), ep("b", "b")}
	for _, tc := range []struct {
		name       string
		eps        []*Endpoint
		accessible func(map[string]string) bool
		want       string
		wantErr    error
	}{
		{"the endpoint of the volume's node", nodes, in("b"), "b", nil},
		{"the volume's node is not served: wait", nodes, in("c"), "", ErrTopologyNotServed},
		{"one node endpoint, the volume on another node: wait", nodes[:1], in("c"), "", ErrTopologyNotServed},
		{"no node affinity, several endpoints: cannot tell", nodes, nil, "", ErrAmbiguous},
		{"no node affinity, one endpoint", nodes[:1], nil, "a", nil},
		{"central driver, one endpoint, no node affinity", []*Endpoint{ep("central", "")}, nil, "central", nil},
		{"central driver, one endpoint, volume with node affinity", []*Endpoint{ep("central", "")}, in("a"), "central", nil},
		{"several endpoints without topology: cannot tell", []*Endpoint{ep("x", ""), ep("y", "")}, in("a"), "", ErrAmbiguous},
		{"endpoints without topology are never matched by affinity", []*Endpoint{ep("x", ""), ep("b", "b")}, in("b"), "b", nil},
		{"driver not served", nil, in("a"), "", ErrDriverNotServed},
	} {
		got, err := chooseForDelete("d", tc.eps, tc.accessible)
		switch {
		case tc.wantErr != nil && (!errors.Is(err, tc.wantErr) || got != nil):
			t.Errorf("%s: got %v, %v; want no endpoint and %v", tc.name, got, err, tc.wantErr)
		case tc.wantErr == nil && (err != nil || got == nil || got.Address != tc.want):
			t.Errorf("%s: got %v, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}
