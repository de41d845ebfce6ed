package userdriver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/endpoint"
	"github.com/volplane/volplane/internal/hostpath"
)

// The proxy forwards every service a driver serves, and faults controller
// calls only while faults are on.
func TestFaultProxyForwardsAndFaultsOnlyWhenOn(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	drv, err := hostpath.New(hostpath.Config{Endpoint: endpoint.Format(filepath.Join(dir, "drv.sock")), NodeID: "node-1",
		DataDir: filepath.Join(dir, "data"), Capacity: 1 << 30, Mounter: hostpath.NewFakeMounter()})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- drv.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	sock := &process{what: "driver", socket: filepath.Join(dir, "drv.sock"), done: make(chan struct{})}
	if err := sock.waitServing(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	p, err := StartFaultProxy(filepath.Join(dir, "proxy.sock"), endpoint.Format(filepath.Join(dir, "drv.sock")), hostpath.Faults{Seed: 1, Unavailable: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	e, err := csi.Dial(ctx, p.Address, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Info.Driver != hostpath.DriverName || !e.Info.Controller || !e.Info.Node || e.Info.NodeID != "node-1" {
		t.Fatalf("probe through the proxy: %+v", e.Info)
	}
	req := &csipb.CreateVolumeRequest{Name: "v1", VolumeCapabilities: []*csipb.VolumeCapability{{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}}

	p.SetFaults(true)
	if _, err := e.CreateVolume(ctx, req); status.Code(err) != codes.Unavailable {
		t.Fatalf("faults on: CreateVolume %v, want Unavailable", err)
	}
	if p.Injected() != 1 {
		t.Errorf("injected %d, want 1", p.Injected())
	}
	p.SetFaults(false)
	v, err := e.CreateVolume(ctx, req)
	if err != nil || v.GetVolumeId() == "" {
		t.Fatalf("faults off: CreateVolume %v, %v", v, err)
	}
	if p.Injected() != 1 {
		t.Errorf("injected %d with faults off", p.Injected())
	}
}
