package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

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
