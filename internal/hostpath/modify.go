package hostpath

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The mutable parameters (a VolumeAttributesClass's parameters in
// Kubernetes) this driver honours. It has nothing real to tune, so it only
// checks and records them: they are what a modification can be tested on.
const (
	// ParamIOPS is a decimal integer from MinIOPS to MaxIOPS.
	ParamIOPS = "iops"
	// ParamTier is TierStandard or TierPremium.
	ParamTier = "tier"

	MinIOPS = 1
	MaxIOPS = 100000

	TierStandard = "standard"
	TierPremium  = "premium"
)

// CheckMutableParameters checks every key and value of params as
// CreateVolume and ControllerModifyVolume do (an InvalidArgument status), in
// key order so the message of a request with several mistakes is stable.
func CheckMutableParameters(params map[string]string) error {
	for _, key := range slices.Sorted(maps.Keys(params)) {
		if problem := mutableParameterProblem(key, params[key]); problem != "" {
			return status.Errorf(codes.InvalidArgument, "mutable parameter %q: %s", key, problem)
		}
	}
	return nil
}

func mutableParameterProblem(key, value string) string {
	switch key {
	case ParamIOPS:
		n, err := strconv.Atoi(value)
		if err != nil || n < MinIOPS || n > MaxIOPS || strings.TrimSpace(value) != value {
			return fmt.Sprintf("value %q is not a decimal integer from %d to %d", value, MinIOPS, MaxIOPS)
		}
	case ParamTier:
		if value != TierStandard && value != TierPremium {
			return fmt.Sprintf("value %q is not %q or %q", value, TierStandard, TierPremium)
		}
	default:
		return fmt.Sprintf("unknown to this driver, which accepts %q and %q only", ParamIOPS, ParamTier)
	}
	return ""
}

// withMutableParameters returns current with params laid over it: a key
// not named in a modification keeps its value (the CSI call names the
// attributes to change). It returns nil when nothing would change.
func withMutableParameters(current, params map[string]string) map[string]string {
	changed := false
	for k, v := range params {
		if old, ok := current[k]; !ok || old != v {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	out := maps.Clone(current)
	if out == nil {
		out = make(map[string]string, len(params))
	}
	maps.Copy(out, params)
	return out
}

// ControllerModifyVolume changes the mutable parameters of a volume;
// repeating a modification changes nothing and succeeds.
func (s *controllerServer) ControllerModifyVolume(ctx context.Context, req *csi.ControllerModifyVolumeRequest) (*csi.ControllerModifyVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkName("volume ID", id); err != nil {
		return nil, err
	}
	if err := CheckMutableParameters(req.GetMutableParameters()); err != nil {
		return nil, err
	}
	vol, unlock, err := s.d.lockedVolume(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	next := withMutableParameters(vol.MutableParameters, req.GetMutableParameters())
	if next == nil {
		return &csi.ControllerModifyVolumeResponse{}, nil
	}
	err = s.d.store.update(func(st *state) error {
		st.editVolume(id).MutableParameters = next
		return nil
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "modify volume %s: %v", id, err)
	}
	return &csi.ControllerModifyVolumeResponse{}, nil
}

// recreateMutable gives an existing volume, asked for again by
// CreateVolume, the mutable parameters of that request: they are mutable, so
// they do not make it another volume, and a retried creation whose
// VolumeAttributesClass was made again with other parameters meanwhile must
// leave the volume as the PV will say. Unlike a modification, the request
// names all of them.
func (d *Driver) recreateMutable(vol *volume, params map[string]string) error {
	if maps.Equal(vol.MutableParameters, params) {
		return nil
	}
	err := d.store.update(func(st *state) error {
		st.editVolume(vol.ID).MutableParameters = maps.Clone(params)
		return nil
	})
	if err != nil {
		return status.Errorf(codes.Internal, "create volume %s: %v", vol.Name, err)
	}
	return nil
}

// MutableParameters returns a copy of the mutable parameters the driver
// holds for a volume, and whether the volume exists: what a modification
// made of it, for whoever checks that one happened (CSI has no call that
// returns them).
func (d *Driver) MutableParameters(volumeID string) (map[string]string, bool) {
	vol := d.store.current().Volumes.Get(volumeID)
	if vol == nil {
		return nil, false
	}
	return maps.Clone(vol.MutableParameters), true
}
