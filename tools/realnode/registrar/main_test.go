package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type identity struct {
	csi.UnimplementedIdentityServer
}

func (*identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: "hostpath.csi.volplane.io", VendorVersion: "test"}, nil
}

// TestRegistration is what the kubelet's plugin watcher does with the
// registrar: it finds <dir>/<driver>-reg.sock, asks GetInfo and reports
// the outcome. The driver comes up after the registrar, as in a pod.
func TestRegistration(t *testing.T) {
	dir := t.TempDir()
	csiSock, regDir := filepath.Join(dir, "csi.sock"), filepath.Join(dir, "registration")
	if err := os.Mkdir(regDir, 0o755); err != nil {
		t.Fatal(err)
	}
	o := options{csiAddress: csiSock, registrationDir: regDir, timeout: time.Second,
		kubeletPath: "/var/lib/kubelet/plugins/hostpath.csi.volplane.io/csi.sock"}
	errs := make(chan error, 1)
	go func() { errs <- run(o) }()
	lis, err := net.Listen("unix", csiSock)
	if err != nil {
		t.Fatal(err)
	}
	drv := grpc.NewServer()
	csi.RegisterIdentityServer(drv, &identity{})
	go func() { _ = drv.Serve(lis) }()
	defer drv.Stop()

	reg := filepath.Join(regDir, "hostpath.csi.volplane.io-reg.sock")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(reg); err == nil {
			break
		}
		select {
		case err := <-errs:
			t.Fatalf("registrar ended: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s", reg)
		}
		time.Sleep(50 * time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+reg, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := registration.NewRegistrationClient(conn)
	info, err := c.GetInfo(context.Background(), &registration.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registration.CSIPlugin || info.Name != "hostpath.csi.volplane.io" || info.Endpoint != o.kubeletPath ||
		len(info.SupportedVersions) != 1 || info.SupportedVersions[0] != "1.0.0" {
		t.Errorf("GetInfo: %v", info)
	}
	if _, err := c.NotifyRegistrationStatus(context.Background(), &registration.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Errorf("NotifyRegistrationStatus: %v", err)
	}
	if err := probe(reg, "hostpath.csi.volplane.io", time.Second); err != nil {
		t.Errorf("healthz probe: %v", err)
	}
	if fi, err := os.Stat(reg); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("socket mode: %v %v", fi.Mode(), err)
	}
}
