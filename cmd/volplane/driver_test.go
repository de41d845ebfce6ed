package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/volplane/volplane/internal/hostpath"
)

// `volplane driver` serves CSI on its socket until SIGTERM, then exits 0
// and removes the socket.
func TestDriverServesCSIUntilTerminated(t *testing.T) {
	sockDir, err := os.MkdirTemp("", "vpd") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "csi.sock")
	cmd := volplane(t, "driver", "--endpoint", "unix://"+sock, "--node-id", "node-1", "--data-dir", t.TempDir())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, err := os.Stat(sock); err != nil; _, err = os.Stat(sock) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("driver never created %s:\n%s", sock, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		t.Fatalf("GetPluginInfo: %v", err)
	}
	if info.GetName() != hostpath.DriverName {
		t.Errorf("driver name %q, want %q", info.GetName(), hostpath.DriverName)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("driver exited with %v after SIGTERM:\n%s", err, out.String())
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket %s left behind after a clean stop", sock)
	}
}

func TestDriverRejectsBadFlagsClearly(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"driver"}, `required flag(s) "data-dir", "endpoint", "node-id" not set`},
		{[]string{"driver", "--endpoint", "tcp://127.0.0.1:1", "--node-id", "n", "--data-dir", dir}, "unix://"},
		{[]string{"driver", "--endpoint", "unix:///tmp/x.sock", "--node-id", "n", "--data-dir", dir, "--capacity", "lots"}, `--capacity "lots"`},
	}
	for _, c := range cases {
		root := newRootCommand()
		root.SetArgs(c.args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("volplane %s: error = %v, want it to say %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// A driver killed outright (SIGKILL: no clean stop, its socket left behind)
// restarts on the same data dir with every volume, attachment and byte of
// accounting it had, under the same flags.
func TestDriverKilledRestartsWithEverythingItHad(t *testing.T) {
	sockDir, err := os.MkdirTemp("", "vpk")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock, data := filepath.Join(sockDir, "csi.sock"), t.TempDir()
	args := []string{"driver", "--endpoint", "unix://" + sock, "--node-id", "node-1", "--data-dir", data,
		"--capacity", "10Mi", "--max-volumes-per-node", "2", "--attach-required"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	first := startDriver(t, sock, args)
	ctl := csi.NewControllerClient(dialSocket(t, sock))
	var ids []string
	for _, name := range []string{"a", "b"} {
		v, err := ctl.CreateVolume(ctx, mountVolume(name, 4<<20))
		if err != nil {
			t.Fatalf("CreateVolume %s: %v", name, err)
		}
		ids = append(ids, v.GetVolume().GetVolumeId())
	}
	if _, err := ctl.ControllerPublishVolume(ctx, publish(ids[0])); err != nil {
		t.Fatalf("ControllerPublishVolume: %v", err)
	}
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	second := startDriver(t, sock, args)
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	conn := dialSocket(t, sock)
	ctl = csi.NewControllerClient(conn)
	list, err := ctl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil {
		t.Fatalf("ListVolumes after the restart: %v", err)
	}
	var listed []string
	for _, e := range list.GetEntries() {
		listed = append(listed, e.GetVolume().GetVolumeId())
		if e.GetVolume().GetVolumeId() == ids[0] && !slices.Contains(e.GetStatus().GetPublishedNodeIds(), "node-1") {
			t.Errorf("volume %s lost its attachment to node-1: %v", ids[0], e.GetStatus())
		}
	}
	slices.Sort(listed)
	slices.Sort(ids)
	if !slices.Equal(listed, ids) {
		t.Errorf("volumes after the restart %v, want %v", listed, ids)
	}
	// The 8Mi given out still count: 4Mi more does not fit in 10Mi.
	if _, err := ctl.CreateVolume(ctx, mountVolume("c", 4<<20)); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("CreateVolume beyond the capacity after the restart: %v, want ResourceExhausted", err)
	}
	// Still usable: published again (idempotent), and the other one too.
	for _, id := range ids {
		if _, err := ctl.ControllerPublishVolume(ctx, publish(id)); err != nil {
			t.Errorf("ControllerPublishVolume %s after the restart: %v", id, err)
		}
	}
	info, err := csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || info.GetMaxVolumesPerNode() != 2 {
		t.Errorf("NodeGetInfo: %v, %v; want max 2 volumes per node", info, err)
	}
}

func startDriver(t *testing.T, sock string, args []string) *exec.Cmd {
	t.Helper()
	cmd := volplane(t, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		conn := dialSocket(t, sock)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{})
		cancel()
		if err == nil {
			return cmd
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("driver never answered on %s: %v\n%s", sock, err, out.String())
		}
	}
}

func dialSocket(t *testing.T, sock string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func mountVolume(name string, bytes int64) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:          name,
		CapacityRange: &csi.CapacityRange{RequiredBytes: bytes},
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	}
}

func publish(id string) *csi.ControllerPublishVolumeRequest {
	return &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: "node-1",
		VolumeCapability: mountVolume("", 0).VolumeCapabilities[0]}
}
