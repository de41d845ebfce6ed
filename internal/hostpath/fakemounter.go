package hostpath

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// fakeLoopPrefix names the loop devices FakeMounter hands out; they exist
// only in its records.
const fakeLoopPrefix = "/dev/fake-loop"

// FakeMounter is a Mounter that records mounts and loop devices instead of
// asking the kernel, for tests and for running the driver without root. It
// is as strict as the kernel where that catches driver bugs: the target of a
// mount must exist, a mount point cannot be mounted over, and unmounting
// what is not mounted fails, and a symlink on the way to a target is
// followed, as mount, umount and the mount point check follow it. Nothing is written to the filesystem, so a
// published target stays the empty directory or file the driver created.
// Keep one FakeMounter across driver restarts, as the kernel would keep its
// mounts.
type FakeMounter struct {
	// LoopDevicesUnavailable makes AttachLoop fail as on a node without
	// loop devices. Set it before the mounter is used.
	LoopDevicesUnavailable bool

	mu     sync.Mutex
	mounts map[string]FakeMount
	loops  map[string]string // backing file -> device
	next   int
}

// FakeMount is one recorded mount.
type FakeMount struct {
	Source   string
	ReadOnly bool
	Options  []string
}

// NewFakeMounter returns a FakeMounter with nothing mounted.
func NewFakeMounter() *FakeMounter {
	return &FakeMounter{mounts: map[string]FakeMount{}, loops: map[string]string{}}
}

// Mounts returns the mounts by target path, symlinks resolved.
func (f *FakeMounter) Mounts() map[string]FakeMount {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.mounts)
}

// Resolve follows the recorded mounts from path to the directory they lead
// to (a bind mount's source, and its source's if that is a mount point
// too): where a real mount would show the data a pod writes at path. A
// path that is no mount point is its own answer.
func (f *FakeMounter) Resolve(path string) string {
	mounts := f.Mounts()
	for range len(mounts) + 1 {
		next, ok := mounts[path]
		if !ok {
			return path
		}
		path = next.Source
	}
	return path
}

// LoopDevices returns the attached loop devices by backing file.
func (f *FakeMounter) LoopDevices() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.loops)
}

func (f *FakeMounter) BindMount(source, target string, readOnly bool, options []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	target = followed(target)
	if _, err := os.Lstat(target); err != nil {
		return fmt.Errorf("mount %s on %s: %w", source, target, err)
	}
	if !f.isLoopDeviceLocked(source) {
		if _, err := os.Stat(source); err != nil {
			return fmt.Errorf("mount %s on %s: %w", source, target, err)
		}
	}
	if _, ok := f.mounts[target]; ok {
		return fmt.Errorf("mount %s on %s: target is already a mount point", source, target)
	}
	f.mounts[target] = FakeMount{Source: source, ReadOnly: readOnly, Options: options}
	return nil
}

func (f *FakeMounter) Unmount(target string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	target = followed(target)
	if _, ok := f.mounts[target]; !ok {
		return fmt.Errorf("umount %s: not mounted", target)
	}
	delete(f.mounts, target)
	return nil
}

func (f *FakeMounter) IsMountPoint(path string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.mounts[followed(path)]
	return ok, nil
}

// followed is path with its symlinks followed, as the kernel follows them;
// a path that does not resolve is taken as it is.
func followed(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

func (f *FakeMounter) AttachLoop(file string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.LoopDevicesUnavailable {
		return "", fmt.Errorf("%w: simulated by FakeMounter", ErrLoopUnavailable)
	}
	if _, err := os.Stat(file); err != nil {
		return "", fmt.Errorf("attach loop device: %w", err)
	}
	if dev, ok := f.loops[file]; ok {
		return dev, nil
	}
	dev := fmt.Sprintf("%s%d", fakeLoopPrefix, f.next)
	f.next++
	f.loops[file] = dev
	return dev, nil
}

func (f *FakeMounter) DetachLoop(file string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.loops, file)
	return nil
}

func (f *FakeMounter) ResizeLoop(file string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.loops[file]; !ok {
		return fmt.Errorf("resize loop device of %s: not attached", file)
	}
	return nil
}

func (f *FakeMounter) isLoopDeviceLocked(path string) bool {
	if !strings.HasPrefix(path, fakeLoopPrefix) {
		return false
	}
	for _, dev := range f.loops {
		if dev == path {
			return true
		}
	}
	return false
}
