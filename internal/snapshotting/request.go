package snapshotting

import (
	"fmt"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// CreateRequest is the CreateSnapshot request of a dynamic content, in
// plain values (the loop builds the CSI message): the reference's name
// ("snapshot-" + the VolumeSnapshot's UID, --snapshot-name-uuid-length -1),
// the source volume, and the parameters.
type CreateRequest struct {
	Name           string
	SourceVolumeID string
	Parameters     map[string]string
}

// reservedParameters are the csi.storage.k8s.io/ keys a
// VolumeSnapshotClass may carry: they are for volplane, never sent to the
// driver. Any other key of that prefix is refused, as the reference's
// RemovePrefixedParameters does.
var reservedParameters = map[string]bool{
	snapshotapi.SecretNameParameter:              true,
	snapshotapi.SecretNamespaceParameter:         true,
	snapshotapi.ListSecretNameParameter:          true,
	snapshotapi.ListSecretNamespaceParameter:     true,
	snapshotapi.GroupGetSecretNameParameter:      true,
	snapshotapi.GroupGetSecretNamespaceParameter: true,
	snapshotapi.GroupSecretNameParameter:         true,
	snapshotapi.GroupSecretNamespaceParameter:    true,
}

// BuildCreate is the CreateSnapshot request of content c, whose class is
// class (nil when c names none). The error is in the reference's words and
// means no call is made: the content is not bound, names no volume, has no
// class, or the class has an unknown csi.storage.k8s.io/ parameter.
func BuildCreate(c *snapv1.VolumeSnapshotContent, class *snapv1.VolumeSnapshotClass) (CreateRequest, error) {
	if class == nil {
		return CreateRequest{}, fmt.Errorf("failed to get input parameters to create snapshot for content %s: %q",
			c.Name, fmt.Sprintf("failed to take snapshot %s without a snapshot class", c.Name))
	}
	params, err := DriverParameters(class.Parameters)
	if err != nil {
		return CreateRequest{}, err
	}
	ref := c.Spec.VolumeSnapshotRef
	params[snapshotapi.SnapshotNameKey] = ref.Name
	params[snapshotapi.SnapshotNamespaceKey] = ref.Namespace
	params[snapshotapi.ContentNameKey] = c.Name
	if ref.UID == "" {
		return CreateRequest{}, fmt.Errorf("cannot create snapshot. Snapshot content %s not bound to a snapshot", c.Name)
	}
	if c.Spec.Source.VolumeHandle == nil || *c.Spec.Source.VolumeHandle == "" {
		return CreateRequest{}, fmt.Errorf("cannot create snapshot. Volume handle not found in snapshot content %s", c.Name)
	}
	return CreateRequest{Name: snapshotapi.BackendName(ref.UID), SourceVolumeID: *c.Spec.Source.VolumeHandle, Parameters: params}, nil
}

// DriverParameters are the class's parameters without its
// csi.storage.k8s.io/ keys; an unknown key of that prefix is an error.
func DriverParameters(class map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(class)+3)
	for k, v := range class {
		if !strings.HasPrefix(k, snapshotapi.ParameterPrefix) {
			out[k] = v
			continue
		}
		if !reservedParameters[k] {
			return map[string]string{}, fmt.Errorf("failed to remove CSI Parameters of prefixed keys: found unknown parameter key %q with reserved namespace %s",
				k, snapshotapi.ParameterPrefix)
		}
	}
	return out, nil
}

// CreateFailed is the error of a failed CreateSnapshot, in the reference's
// words (it becomes the status error and the event).
func CreateFailed(c *snapv1.VolumeSnapshotContent, err error) error {
	volume := ""
	if c.Spec.Source.VolumeHandle != nil {
		volume = *c.Spec.Source.VolumeHandle
	}
	return fmt.Errorf("failed to take snapshot of the volume %s: %q", volume, err.Error())
}
