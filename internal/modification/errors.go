package modification

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// UnsupportedError is what a driver without MODIFY_VOLUME would answer.
func UnsupportedError(driver string) error {
	return status.Error(codes.Unimplemented, MessageUnsupported(driver))
}

// MessageUnsupported says that driver cannot modify volumes: the message of
// EventModifyFailed and of the ModifyVolumeError condition.
func MessageUnsupported(driver string) string {
	return fmt.Sprintf("CSI driver %s does not support modifying volumes: controller MODIFY_VOLUME capability is not reported", driver)
}
