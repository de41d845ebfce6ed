package hostpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	mount "k8s.io/mount-utils"
)

// Mounter is what the node service asks of the kernel. Paths are absolute
// and clean. Implementations must be safe for concurrent use.
type Mounter interface {
	// BindMount bind-mounts source (a directory onto a directory, or a
	// device onto a file) onto target, which exists, with extra mount options.
	BindMount(source, target string, readOnly bool, options []string) error
	// Unmount unmounts target.
	Unmount(target string) error
	// IsMountPoint reports whether path is a mount point; a missing path is not.
	IsMountPoint(path string) (bool, error)
	// AttachLoop attaches file to a loop device and returns the device. If
	// file is attached already, it returns that device.
	AttachLoop(file string) (device string, err error)
	// DetachLoop detaches every loop device of file; none is fine.
	DetachLoop(file string) error
	// ResizeLoop makes the loop devices of file see its current size.
	ResizeLoop(file string) error
}

// ErrLoopUnavailable is wrapped by Mounter errors meaning the node has no
// usable loop devices, so block volumes cannot be staged there.
var ErrLoopUnavailable = errors.New("loop devices are unavailable on this node")

// NewMounter returns the Mounter that mounts for real: bind mounts through
// k8s.io/mount-utils, loop devices through losetup. It needs root.
func NewMounter() Mounter {
	// Without systemd: a systemd scope only matters for mounts that leave a
	// process behind (FUSE), never for bind mounts, and mount-utils detects
	// systemd lazily without a lock, which concurrent node calls would race on.
	return &kernelMounter{m: mount.NewWithoutSystemd("")}
}

type kernelMounter struct {
	m mount.Interface
}

func (k *kernelMounter) BindMount(source, target string, readOnly bool, options []string) error {
	opts := append([]string{"bind"}, options...)
	if readOnly {
		// mount-utils turns "bind,ro" into a bind mount and a read-only remount,
		// since a bind mount ignores "ro" on its first pass.
		opts = append(opts, "ro")
	}
	return k.m.Mount(source, target, "", opts)
}

func (k *kernelMounter) Unmount(target string) error {
	return k.m.Unmount(target)
}

func (k *kernelMounter) IsMountPoint(path string) (bool, error) {
	ok, err := k.m.IsMountPoint(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return ok, err
}

func (k *kernelMounter) AttachLoop(file string) (string, error) {
	if err := loopAvailable(); err != nil {
		return "", err
	}
	devices, err := loopDevicesOf(file)
	if err != nil {
		return "", err
	}
	if len(devices) > 0 {
		return devices[0], nil
	}
	out, err := losetup("--find", "--show", file)
	if err != nil {
		// In a container without access to /dev/loop*, this is where it shows.
		return "", fmt.Errorf("%w: %v", ErrLoopUnavailable, err)
	}
	return strings.TrimSpace(out), nil
}

func (k *kernelMounter) DetachLoop(file string) error {
	return forEachLoop(file, "--detach")
}

func (k *kernelMounter) ResizeLoop(file string) error {
	return forEachLoop(file, "--set-capacity")
}

// forEachLoop runs losetup with flag on every loop device of file. Devices
// are looked up by file every time, never remembered: after a reboot the
// same device name may belong to another file.
func forEachLoop(file, flag string) error {
	if loopAvailable() != nil {
		return nil // no loop devices, so none of file's to act on
	}
	devices, err := loopDevicesOf(file)
	if err != nil {
		return err
	}
	for _, dev := range devices {
		if _, err := losetup(flag, dev); err != nil {
			return err
		}
	}
	return nil
}

func loopAvailable() error {
	if _, err := exec.LookPath("losetup"); err != nil {
		return fmt.Errorf("%w: losetup is not installed", ErrLoopUnavailable)
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return fmt.Errorf("%w: %v", ErrLoopUnavailable, err)
	}
	return nil
}

// loopDevicesOf lists the loop devices backed by file; losetup prints one
// "/dev/loopN: [dev]:inode (file)" line for each.
func loopDevicesOf(file string) ([]string, error) {
	out, err := losetup("--associated", file)
	if err != nil {
		return nil, err
	}
	var devices []string
	for line := range strings.Lines(out) {
		if dev, _, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(dev, "/dev/") {
			devices = append(devices, dev)
		}
	}
	return devices, nil
}

func losetup(args ...string) (string, error) {
	out, err := exec.Command("losetup", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
