package hostpath

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The Ephemeral lifecycle mode (a CSI volume in a pod's own spec): the
// kubelet calls NodePublishVolume with no CreateVolume before it and no
// stage, with the volume context key EphemeralContextKey "true" (the
// kubelet sends it to a CSIDriver with podInfoOnMount), and
// NodeUnpublishVolume when the pod goes; the volume lives exactly that long.
//
// Ephemeral volumes are a map of their own in the state, apart from the
// persistent ones: no controller call, listing or persistent node call
// sees them, and an ephemeral publish never reaches a persistent volume,
// whatever the ID or the attributes say. The volume context is the pod
// author's: it may hold SizeAttribute and the kubelet's own keys
// (csi.storage.k8s.io/...), nothing else.
const (
	// EphemeralContextKey is the kubelet's volume context key saying the
	// publish is of an inline ephemeral volume.
	EphemeralContextKey = "csi.storage.k8s.io/ephemeral"
	// SizeAttribute is the one attribute an inline volume may set: its
	// size, a Kubernetes quantity ("64Mi").
	SizeAttribute = "size"
	// DefaultEphemeralBytes is the size of an inline volume that sets
	// none: 100 MiB.
	DefaultEphemeralBytes = 100 << 20
	// kubeletKeyPrefix prefixes the keys the kubelet adds (podInfoOnMount,
	// service account tokens).
	kubeletKeyPrefix = "csi.storage.k8s.io/"
	// ephemeralIDPrefix names an ephemeral volume's data: issueID of the
	// CO's volume ID, so no ID the CO sends becomes a path.
	ephemeralIDPrefix = "eph-"
)

// ephemeralVolume is an inline volume: created by its publish, recorded
// before its data is made, deleted with its data by its unpublish.
type ephemeralVolume struct {
	ID            string `json:"id"`
	CapacityBytes int64  `json:"capacityBytes"`
	// Node is the node that published it; Target the target path as the
	// CO gave it, RealPath resolved.
	Node      string    `json:"node"`
	Target    string    `json:"target"`
	RealPath  string    `json:"realPath"`
	ReadOnly  bool      `json:"readOnly"`
	CreatedAt time.Time `json:"createdAt"`
}

// isEphemeral says whether a NodePublishVolume is of an inline volume.
func isEphemeral(req *csi.NodePublishVolumeRequest) bool {
	return req.GetVolumeContext()[EphemeralContextKey] == "true"
}

// ephemeralSize checks an inline volume's attributes: SizeAttribute and the
// kubelet's keys only. It returns the size asked, or the default.
func ephemeralSize(attrs map[string]string) (int64, error) {
	size := int64(DefaultEphemeralBytes)
	for k, v := range attrs {
		switch {
		case strings.HasPrefix(k, kubeletKeyPrefix):
		case k == SizeAttribute:
			q, err := resource.ParseQuantity(v)
			if err != nil || q.Sign() <= 0 {
				return 0, status.Errorf(codes.InvalidArgument, "volume attribute %s=%q: a positive quantity is required", k, v)
			}
			size = q.Value()
		default:
			return 0, status.Errorf(codes.InvalidArgument, "volume attribute %q is not known: an inline volume takes %q only", k, SizeAttribute)
		}
	}
	return size, nil
}

// publishEphemeral creates the inline volume on first publish and mounts
// it at the target. Record first, then data, then mount: a crash at any
// point leaves a record the unpublish the kubelet owes the pod removes,
// data and all; a repeated publish picks up where it stopped.
func (s *nodeServer) publishEphemeral(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if s.d.cfg.Network {
		return nil, status.Errorf(codes.InvalidArgument, "volume %s: inline ephemeral volumes are served by the node-local driver only", id)
	}
	target, t, err := s.d.checkMountRequest(id, "target path", req.GetTargetPath(), req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	if t != accessMount {
		return nil, status.Errorf(codes.InvalidArgument, "volume %s: an inline ephemeral volume is a mount volume", id)
	}
	size, err := ephemeralSize(req.GetVolumeContext())
	if err != nil {
		return nil, err
	}
	unlock, err := s.d.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	want := ephemeralVolume{ID: id, CapacityBytes: size, Node: s.node, Target: target.given, RealPath: target.real,
		ReadOnly: req.GetReadonly() || isReadOnlyMode(req.GetVolumeCapability())}
	recorded, err := s.d.checkEphemeral(want)
	if err != nil {
		return nil, err
	}
	if !recorded {
		if err := s.d.recordEphemeral(want); err != nil {
			return nil, err
		}
	}
	data := s.d.disk.ephemeralPath(id)
	if err := s.d.makeEphemeralData(data, size); err != nil {
		return nil, err
	}
	if err := ensureDir(target.real); err != nil {
		return nil, status.Errorf(codes.Internal, "publish volume %s: %v", id, err)
	}
	if err := s.d.bindOnce(data, target.real, want.ReadOnly, req.GetVolumeCapability().GetMount().GetMountFlags()); err != nil {
		return nil, status.Errorf(codes.Internal, "publish volume %s: %v", id, err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// checkEphemeral decides whether the inline volume want is refused, and
// whether it is recorded already (a repeated publish).
func (d *Driver) checkEphemeral(want ephemeralVolume) (recorded bool, err error) {
	st := d.store.current()
	if st.Volumes.Get(want.ID) != nil {
		return false, status.Errorf(codes.AlreadyExists, "volume %s is a persistent volume, not an inline one", want.ID)
	}
	if e := st.Ephemeral.Get(want.ID); e != nil {
		switch {
		case e.Node != want.Node || e.Target != want.Target:
			return false, status.Errorf(codes.FailedPrecondition, "inline volume %s is published at %s already", want.ID, e.Target)
		case e.RealPath != want.RealPath:
			return false, status.Errorf(codes.FailedPrecondition, "inline volume %s was published at %s, which resolved to %s and now resolves to %s",
				want.ID, e.Target, e.RealPath, want.RealPath)
		case e.ReadOnly != want.ReadOnly || e.CapacityBytes != want.CapacityBytes:
			return false, status.Errorf(codes.AlreadyExists, "inline volume %s is published with readonly=%t and %d bytes", want.ID, e.ReadOnly, e.CapacityBytes)
		}
		return true, nil
	}
	if who := otherClaim(st, want.RealPath, claimRef{volumeID: want.ID, target: want.Target}); who != "" {
		return false, status.Errorf(codes.FailedPrecondition, "target path %s is in use: %s", want.Target, who)
	}
	return false, nil
}

// recordEphemeral records a new inline volume, within the driver's
// capacity.
func (d *Driver) recordEphemeral(want ephemeralVolume) error {
	key := ephemeralIDPrefix + want.ID
	if err := d.store.reserve(key, want.CapacityBytes, d.cfg.Capacity); err != nil {
		return status.Errorf(codes.ResourceExhausted, "inline volume %s: %v", want.ID, err)
	}
	defer d.store.release(key)
	want.CreatedAt = time.Now().UTC()
	err := d.store.commit(key, func(st *state) error {
		st.Ephemeral.Put(want.ID, &want)
		return nil
	})
	if err != nil {
		return status.Errorf(codes.Internal, "record inline volume %s: %v", want.ID, err)
	}
	return nil
}

// makeEphemeralData makes the data directory of a recorded inline volume
// unless it is there (a repeated publish keeps what the pod wrote).
func (d *Driver) makeEphemeralData(path string, size int64) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return status.Errorf(codes.Internal, "inline volume data: %v", err)
	}
	if err := createData(path, accessMount, size); err != nil {
		return status.Errorf(codes.Internal, "inline volume data: %v", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return status.Errorf(codes.Internal, "inline volume data: %v", err)
	}
	return nil
}

// unpublishEphemeral unmounts an inline volume and deletes it, data and
// record, in that order: a crash part way leaves the record, and the
// retried unpublish finishes. A target other than the one recorded is not
// the volume's: nothing is done there.
func (s *nodeServer) unpublishEphemeral(e *ephemeralVolume, target string) (*csi.NodeUnpublishVolumeResponse, error) {
	if e.Node != s.node || e.Target != target {
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	real, err := recordedPath("target path", target, e.RealPath)
	if err != nil {
		return nil, err
	}
	if err := s.d.unmountIfMounted(real); err != nil {
		return nil, status.Errorf(codes.Internal, "unpublish volume %s: %v", e.ID, err)
	}
	if err := os.Remove(real); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "unpublish volume %s: %v", e.ID, err)
	}
	if err := removeData(s.d.disk.ephemeralPath(e.ID)); err != nil {
		return nil, status.Errorf(codes.Internal, "delete inline volume %s: %v", e.ID, err)
	}
	err = s.d.store.update(func(st *state) error {
		st.Ephemeral.Delete(e.ID)
		return nil
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "delete inline volume %s: %v", e.ID, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// ephemeralPath is where an inline volume's data lives: under ephemeral/,
// by an ID this driver issues from the CO's.
func (l layout) ephemeralPath(id string) string {
	return filepath.Join(l.root, "ephemeral", issueID(ephemeralIDPrefix, id))
}
