package bundle

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	storagev1 "k8s.io/api/storage/v1"

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

	drivers, err := Start(context.Background(), Config{DataDir: dir, Nodes: []string{"node-1", "node-2"}, Capacity: 1 << 30,
		Mounter: hostpath.NewFakeMounter()})
	if err != nil {
		t.Fatal(err)
	}
	defer drivers.Stop()
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
	for _, node := range []string{"node-1", "node-2"} {
		wantMode(filepath.Join(dir, "csi", node+".sock"), 0o600)
		wantMode(filepath.Join(dir, "csi", "network", node+".sock"), 0o600)
		wantMode(filepath.Join(dir, "hostpath", node), 0o700)
	}
	wantMode(filepath.Join(dir, "network"), 0o700)
}

// Every node is served by its own node-local driver and by the network
// driver's node service for that node; the loops dial each node-local
// driver and the network driver's controller.
func TestEachNodeIsServedByItsLocalDriverAndTheNetworkDriver(t *testing.T) {
	dir, err := os.MkdirTemp("", "vpb")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	drivers, err := Start(context.Background(), Config{DataDir: dir, Nodes: []string{"node-1", "node-2"}, Capacity: 1 << 30,
		Mounter: hostpath.NewFakeMounter()})
	if err != nil {
		t.Fatal(err)
	}
	defer drivers.Stop()
	sock := func(parts ...string) string {
		return "unix://" + filepath.Join(append([]string{dir, "csi"}, parts...)...)
	}
	wantLoops := []string{sock("node-1.sock"), sock("node-2.sock"), sock("network.sock")}
	if !slices.Equal(drivers.Endpoints, wantLoops) {
		t.Errorf("Endpoints = %v, want %v", drivers.Endpoints, wantLoops)
	}
	for _, node := range []string{"node-1", "node-2"} {
		want := []string{sock(node + ".sock"), sock("network", node+".sock")}
		if got := drivers.NodeEndpoints[node]; !slices.Equal(got, want) {
			t.Errorf("NodeEndpoints[%s] = %v, want %v", node, got, want)
		}
	}
}

// The network driver needs attaching and gets its own class; the node-local
// one needs none and keeps the default class.
func TestObjectsDescribeBothDriversAndTheirClasses(t *testing.T) {
	drivers, classes := Objects()
	attach := map[string]bool{}
	for _, d := range drivers {
		attach[d.Name] = *d.Spec.AttachRequired
		// Inline ephemeral volumes: the node-local driver only, with the
		// pod information that marks their publish.
		inline := slices.Contains(d.Spec.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral)
		if want := d.Name == hostpath.DriverName; inline != want || *d.Spec.PodInfoOnMount != want ||
			!slices.Contains(d.Spec.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent) {
			t.Errorf("CSIDriver %s: modes %v, podInfoOnMount %t; want Ephemeral and pod info on the node-local driver only",
				d.Name, d.Spec.VolumeLifecycleModes, *d.Spec.PodInfoOnMount)
		}
	}
	if len(attach) != 2 || attach[hostpath.DriverName] || !attach[hostpath.NetworkDriverName] {
		t.Errorf("CSIDrivers attachRequired %v, want the network driver only", attach)
	}
	byName := map[string]*storagev1.StorageClass{}
	for _, c := range classes {
		byName[c.Name] = c
	}
	net := byName[NetworkClass]
	switch {
	case net == nil:
		t.Fatalf("no %s class", NetworkClass)
	case net.Provisioner != hostpath.NetworkDriverName || *net.VolumeBindingMode != storagev1.VolumeBindingImmediate ||
		!*net.AllowVolumeExpansion || *net.ReclaimPolicy != "Delete":
		t.Errorf("%s = %+v", NetworkClass, net)
	case net.Annotations["storageclass.kubernetes.io/is-default-class"] == "true":
		t.Errorf("%s is the default class; %s is", NetworkClass, ImmediateClass)
	case byName[ImmediateClass].Annotations["storageclass.kubernetes.io/is-default-class"] != "true":
		t.Errorf("%s is not the default class", ImmediateClass)
	}
}

// Every attributes class is for the node-local driver, and the driver
// accepts its parameters (a class it refused would be Infeasible forever).
func TestAttributeClassesAreForTheNodeLocalDriverAndAccepted(t *testing.T) {
	names := map[string]bool{}
	for _, vac := range AttributeClasses() {
		names[vac.Name] = true
		if vac.DriverName != hostpath.DriverName {
			t.Errorf("%s is for driver %s, want %s", vac.Name, vac.DriverName, hostpath.DriverName)
		}
		if err := hostpath.CheckMutableParameters(vac.Parameters); err != nil {
			t.Errorf("the driver refuses %s: %v", vac.Name, err)
		}
	}
	if !names[StandardAttributes] || !names[FastAttributes] || len(names) != 2 {
		t.Errorf("attribute classes %v, want %s and %s", names, StandardAttributes, FastAttributes)
	}
}
