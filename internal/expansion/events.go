package expansion

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// The event reasons, the external-resizer's.
const (
	// EventResizing (Normal): the driver is being asked to expand.
	EventResizing = "Resizing"
	// EventResizeFailed (Warning): the expansion failed, or cannot run.
	EventResizeFailed = "VolumeResizeFailed"
	// EventResizeSuccessful (Normal): expanded, no node expansion needed.
	EventResizeSuccessful = "VolumeResizeSuccessful"
	// EventFileSystemResizeRequired (Normal): expanded on the controller,
	// the node must expand the file system.
	EventFileSystemResizeRequired = "FileSystemResizeRequired"
)

// The fixed event messages.
const (
	MessageResizeSuccessful         = "Resize volume succeeded"
	MessageFileSystemResizeRequired = "Require file system resize of volume on node"
	// MessageNodeResizePending is the FileSystemResizePending condition's.
	MessageNodeResizePending = "Waiting for user to (re-)start a pod to finish file system resize of volume on node."
)

// MessageResizing is the Resizing event's message.
func MessageResizing(pv string) string {
	return fmt.Sprintf("External resizer is resizing volume %s", pv)
}

// ResizeError is the error of a failed ControllerExpandVolume as the
// reference words it; its text is the VolumeResizeFailed event's message.
func ResizeError(pv, driver string, err error) error {
	return fmt.Errorf("resize volume %q by resizer %q failed: %w", pv, driver, err)
}

// MessageOfflineInUse is the VolumeResizeFailed message for a driver that
// expands only offline, while the volume is in use.
func MessageOfflineInUse(claim *v1.PersistentVolumeClaim, driver string) string {
	return fmt.Sprintf("Unable to expand %s/%s because CSI driver %s only supports offline expansion and volume is currently in-use",
		claim.Namespace, claim.Name, driver)
}

// conditionMessage is the ControllerResizeError and NodeResizeError
// conditions' message.
func conditionMessage(err error) string { return fmt.Sprintf("failed to expand pvc with %v", err) }
