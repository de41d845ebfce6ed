package hostpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Staging and target paths come from the CO, and whoever can write to their
// parent directories can plant a symlink there. So every node path is
// resolved before it is checked or used, the driver mounts and removes only
// at the resolved path, and it undoes only what its state records, at the
// resolved path it recorded, and only while the given path still resolves
// there. A symlink cannot then make it mount, unmount or remove elsewhere.

// nodePath is a staging or target path: as given (cleaned), which is what
// the CO names it by, and with its symlinks resolved, which is where the
// driver acts.
type nodePath struct {
	given string
	real  string
}

// nodePath checks a path from a request and resolves it. Neither form may
// be inside DataDir or contain it.
func (d *Driver) nodePath(field, p string) (nodePath, error) {
	given, err := checkNodePath(field, p, d.cfg.DataDir)
	if err != nil {
		return nodePath{}, err
	}
	real, err := resolveExisting(given)
	if err != nil {
		return nodePath{}, status.Errorf(codes.FailedPrecondition, "%s %q cannot be resolved: %v", field, given, err)
	}
	if _, err := checkNodePath(field, real, d.realDataDir); err != nil {
		return nodePath{}, status.Errorf(codes.InvalidArgument, "%s %q resolves to %q, which must not be inside the driver's data dir nor contain it", field, given, real)
	}
	return nodePath{given: given, real: real}, nil
}

// newNodePath is nodePath for a path the driver is about to create or mount
// onto: that path itself must not be a symlink, which would send the mount
// elsewhere and have NodeUnpublishVolume remove what it points to.
func (d *Driver) newNodePath(field, p string) (nodePath, error) {
	np, err := d.nodePath(field, p)
	if err != nil {
		return nodePath{}, err
	}
	if fi, err := os.Lstat(np.given); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nodePath{}, status.Errorf(codes.FailedPrecondition, "%s %q is a symlink; the driver mounts only onto a directory or file of its own", field, np.given)
	}
	return np, nil
}

// recordedPath checks that given still resolves to real, where the driver
// recorded acting on it, and returns real. If it does not, whatever is
// there now is not the driver's to unmount or remove.
func recordedPath(field, given, real string) (string, error) {
	now, err := resolveExisting(given)
	switch {
	case err != nil:
		return "", status.Errorf(codes.FailedPrecondition, "%s %q cannot be resolved: %v; nothing was unmounted or removed", field, given, err)
	case now != real:
		return "", status.Errorf(codes.FailedPrecondition, "%s %q now resolves to %q, not to %q where the volume was mounted; nothing was unmounted or removed",
			field, given, now, real)
	}
	return real, nil
}

// resolveExisting resolves the symlinks of the longest existing prefix of
// the absolute, clean path p and appends the rest. A dangling symlink on the
// way is an error: what it would create is unknown.
func resolveExisting(p string) (string, error) {
	var rest []string
	for cur := p; ; cur = filepath.Dir(cur) {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			return "", fmt.Errorf("%s is a symlink to nothing", cur)
		}
		if filepath.Dir(cur) == cur {
			return "", err
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
	}
}

// claimRef names one record of the state: a volume's staging on a node, or
// one of its publications.
type claimRef struct {
	volumeID string
	node     string // the staging's node; "" for a publication
	target   string // "" for a staging
}

// otherClaim says which record other than self has the real path, or "".
// Two records sharing a path would make undoing one undo the other.
func otherClaim(st *state, real string, self claimRef) string {
	claims := st.paths.Get(real)
	if claims == nil {
		return ""
	}
	for _, c := range claims.claims {
		if c.ref == self {
			continue
		}
		switch c.kind {
		case claimStaging:
			return fmt.Sprintf("volume %s is staged there", c.ref.volumeID)
		case claimPublication:
			return fmt.Sprintf("volume %s is published there", c.ref.volumeID)
		default:
			return fmt.Sprintf("inline volume %s is published there", c.ref.volumeID)
		}
	}
	return ""
}

// checkMountRequest checks what NodeStageVolume and NodePublishVolume both
// carry, in the order the spec's errors are tried: the volume ID, the path
// the call makes (field names it in errors) and the capability.
func (d *Driver) checkMountRequest(id, field, p string, c *csi.VolumeCapability) (nodePath, accessType, error) {
	if err := checkName("volume ID", id); err != nil {
		return nodePath{}, "", err
	}
	path, err := d.newNodePath(field, p)
	if err != nil {
		return nodePath{}, "", err
	}
	t, err := checkCapability(c, d.cfg.Network)
	if err != nil {
		return nodePath{}, "", err
	}
	return path, t, nil
}
