package health

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// MaxConditions is the most conditions the API keeps in one health field
// (its +k8s:maxItems=16), and the most NodeGetStorageHealth entries the
// kubelet accepts (maxStorageHealthConditions).
const MaxConditions = 16

// VolumeConditions maps a CSI VolumeHealth to the API's conditions as the
// kubelet does (mapVolumeHealthConditions): unknown statuses are dropped,
// no entries is healthy (nil). Beyond MaxConditions the rest are dropped,
// so a write never fails validation.
func VolumeConditions(h *csipb.VolumeHealth) []v1.VolumeHealthCondition {
	var out []v1.VolumeHealthCondition
	for _, e := range h.GetHealthStatuses() {
		status, ok := volumeStatus(e.GetStatus())
		if !ok || len(out) == MaxConditions {
			continue
		}
		out = append(out, v1.VolumeHealthCondition{Status: status, Reason: e.GetReason(), Message: e.GetMessage()})
	}
	return out
}

func volumeStatus(s csipb.VolumeHealthErrorType) (v1.VolumeHealthStatusType, bool) {
	switch s {
	case csipb.VolumeHealthErrorType_INACCESSIBLE:
		return v1.VolumeHealthInaccessible, true
	case csipb.VolumeHealthErrorType_DATA_LOSS:
		return v1.VolumeHealthDataLoss, true
	case csipb.VolumeHealthErrorType_DEGRADED:
		return v1.VolumeHealthDegraded, true
	}
	return "", false
}

// SetsEqual says whether a and b hold the same (status, reason) pairs:
// a change of message alone is no change (VolumeHealthConditionSetsEqual).
func SetsEqual(a, b []v1.VolumeHealthCondition) bool {
	return slices.Equal(identities(a), identities(b))
}

func identities(conds []v1.VolumeHealthCondition) []string {
	out := make([]string, 0, len(conds))
	for _, c := range conds {
		out = append(out, string(c.Status)+"/"+c.Reason)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Summary is conditions as one line for events and explain:
// "Inaccessible/DataMissing: message; ...".
func Summary(conds []v1.VolumeHealthCondition) string {
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		p := string(c.Status) + "/" + c.Reason
		if c.Message != "" {
			p += ": " + c.Message
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// StorageConditions maps NodeGetStorageHealth's entries as the kubelet
// does (mapStorageBackendHealth): more than MaxConditions is an error,
// unknown statuses are dropped, a capability maps to an access mode and a
// volume mode and an invalid one is an error.
func StorageConditions(entries []*csipb.NodeGetStorageHealthResponse_StorageBackendHealth) ([]storagev1.StorageHealthCondition, error) {
	if len(entries) > MaxConditions {
		return nil, fmt.Errorf("NodeGetStorageHealth returned %d conditions, maximum is %d", len(entries), MaxConditions)
	}
	var out []storagev1.StorageHealthCondition
	for i, e := range entries {
		var status storagev1.StorageHealthStatusType
		switch e.GetStatus() {
		case csipb.StorageHealthErrorType_STORAGE_UNREACHABLE:
			status = storagev1.StorageUnreachable
		case csipb.StorageHealthErrorType_STORAGE_DEGRADED:
			status = storagev1.StorageDegraded
		default:
			continue
		}
		c := storagev1.StorageHealthCondition{Status: status, Reason: e.GetReason(), Message: e.GetMessage()}
		if capability := e.GetVolumeCapability(); capability != nil {
			access, mode, err := capabilityModes(capability)
			if err != nil {
				return nil, fmt.Errorf("NodeGetStorageHealth condition %d has invalid volume capability: %w", i, err)
			}
			c.AccessMode, c.VolumeMode = &access, &mode
		}
		out = append(out, c)
	}
	return out, nil
}

func capabilityModes(c *csipb.VolumeCapability) (v1.PersistentVolumeAccessMode, v1.PersistentVolumeMode, error) {
	var mode v1.PersistentVolumeMode
	switch c.GetAccessType().(type) {
	case *csipb.VolumeCapability_Block:
		mode = v1.PersistentVolumeBlock
	case *csipb.VolumeCapability_Mount:
		mode = v1.PersistentVolumeFilesystem
	default:
		return "", "", errors.New("access type is required")
	}
	if c.GetAccessMode() == nil {
		return "", "", errors.New("access mode is required")
	}
	switch c.GetAccessMode().GetMode() {
	case csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		return v1.ReadWriteOnce, mode, nil
	case csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER:
		return v1.ReadWriteOncePod, mode, nil
	case csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY:
		return v1.ReadOnlyMany, mode, nil
	case csipb.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER:
		return v1.ReadWriteMany, mode, nil
	}
	return "", "", fmt.Errorf("unsupported access mode %q", c.GetAccessMode().GetMode())
}

// StorageSetsEqual says whether a and b hold the same (status, reason,
// access mode, volume mode) identities, as the kubelet compares before
// writing CSINode status (storageHealthIdentityEqual).
func StorageSetsEqual(a, b []storagev1.StorageHealthCondition) bool {
	id := func(conds []storagev1.StorageHealthCondition) []string {
		out := make([]string, 0, len(conds))
		for _, c := range conds {
			k := string(c.Status) + "/" + c.Reason
			if c.AccessMode != nil {
				k += "/" + string(*c.AccessMode)
			}
			if c.VolumeMode != nil {
				k += "/" + string(*c.VolumeMode)
			}
			out = append(out, k)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(id(a), id(b))
}
