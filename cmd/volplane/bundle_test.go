package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
)

// The bundled drivers' sockets are owner-only under a permissive umask, and
// so is their directory, even one an older `up` left open to its group.
func TestUpDriverSocketsArePrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir, err := os.MkdirTemp("", "vpb") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, "csi"), 0o750); err != nil {
		t.Fatal(err)
	}

	drivers, err := startDrivers(context.Background(), dir, []string{"node-1", "node-2"}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer drivers.stop()
	wantMode := func(path string, want fs.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %#o, want %#o", path, got, want)
		}
	}
	wantMode(filepath.Join(dir, "csi"), 0o700)
	wantMode(filepath.Join(dir, "csi", "network"), 0o700)
	wantMode(filepath.Join(dir, "csi", "network.sock"), 0o600)
	wantMode(filepath.Join(dir, "network"), 0o700)
	for _, node := range []string{"node-1", "node-2"} {
		wantMode(filepath.Join(dir, "csi", node+".sock"), 0o600)
		wantMode(filepath.Join(dir, "csi", "network", node+".sock"), 0o600)
		wantMode(filepath.Join(dir, "hostpath", node), 0o700)
	}
}

// `up` serves the bundled driver twice: node-local on each node's socket,
// and as network storage, its controller dialed by the loops and each node's
// node service listed for that node's agent.
func TestUpServesTheNetworkDriverBesideTheNodeLocalOnes(t *testing.T) {
	dir, err := os.MkdirTemp("", "vpb")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	drivers, err := startDrivers(context.Background(), dir, []string{"node-1", "node-2"}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer drivers.stop()
	sock := func(parts ...string) string {
		return "unix://" + filepath.Join(append([]string{dir, "csi"}, parts...)...)
	}
	wantEndpoints := []string{sock("node-1.sock"), sock("node-2.sock"), sock("network.sock")}
	if !slices.Equal(drivers.endpoints, wantEndpoints) {
		t.Errorf("endpoints = %v, want %v", drivers.endpoints, wantEndpoints)
	}
	for _, node := range []string{"node-1", "node-2"} {
		want := []string{sock(node + ".sock"), sock("network", node+".sock")}
		if got := drivers.nodeEndpoints[node]; !slices.Equal(got, want) {
			t.Errorf("node endpoints of %s = %v, want %v", node, got, want)
		}
	}
	ctx := context.Background()
	network, err := csi.Dial(ctx, sock("network.sock"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer network.Close()
	if i := network.Info; i.Driver != hostpath.NetworkDriverName || !i.Publish || i.Accessibility || i.Node {
		t.Errorf("network controller socket: %+v, want %s with attach, without topology or node service", i, hostpath.NetworkDriverName)
	}
	node2, err := csi.Dial(ctx, sock("network", "node-2.sock"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer node2.Close()
	if i := node2.Info; i.Driver != hostpath.NetworkDriverName || i.Controller || i.NodeID != "node-2" || len(i.Topology) != 0 {
		t.Errorf("network node socket of node-2: %+v, want node-2's node service only, without topology", i)
	}
}

func TestBundleRegistersTheNetworkDriverWithAttachAndItsClass(t *testing.T) {
	drivers, classes := bundleObjects()
	byName := map[string]*storagev1.CSIDriver{}
	for _, d := range drivers {
		byName[d.Name] = d
	}
	local, network := byName[hostpath.DriverName], byName[hostpath.NetworkDriverName]
	if local == nil || network == nil || len(drivers) != 2 {
		t.Fatalf("CSIDrivers %v, want %s and %s", drivers, hostpath.DriverName, hostpath.NetworkDriverName)
	}
	if *local.Spec.AttachRequired {
		t.Error("the node-local driver must not require attach")
	}
	s := network.Spec
	if !*s.AttachRequired || *s.PodInfoOnMount || !slices.Equal(s.VolumeLifecycleModes, []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}) {
		t.Errorf("network CSIDriver spec %+v, want attach required, no pod info on mount, persistent", s)
	}
	var class *storagev1.StorageClass
	for _, c := range classes {
		if c.Name == NetworkClass {
			class = c
		}
	}
	switch {
	case class == nil:
		t.Fatalf("no StorageClass %s among %d", NetworkClass, len(classes))
	case class.Provisioner != hostpath.NetworkDriverName,
		*class.VolumeBindingMode != storagev1.VolumeBindingImmediate,
		*class.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete,
		!*class.AllowVolumeExpansion,
		class.Annotations["storageclass.kubernetes.io/is-default-class"] != "":
		t.Errorf("StorageClass %s = %+v, want the network driver, Immediate, Delete, expandable, not default", NetworkClass, class)
	}
}
