package modification

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// IsFinal says whether a ControllerModifyVolume error means the call is
// not running any more, as the external-resizer's IsFinalError: every
// answer but Canceled, DeadlineExceeded, Unavailable, ResourceExhausted and
// Aborted; an error that is not a gRPC status is not final (we cannot know
// what the driver did). Note ResourceExhausted: final for the provisioner
// (csi.Classify), not here.
func IsFinal(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

// IsInfeasible says whether the driver refused the parameters themselves
// (InvalidArgument): retrying the same class will not help, so the claim
// is marked Infeasible and retried slowly. Other final errors, even
// NotFound, stay InProgress (unlike expansion, see csi.IsInfeasible).
func IsInfeasible(err error) bool { return status.Code(err) == codes.InvalidArgument }

// UnsupportedError is what a driver without MODIFY_VOLUME would answer.
func UnsupportedError(driver string) error {
	return status.Error(codes.Unimplemented, MessageUnsupported(driver))
}

// MessageUnsupported says that driver cannot modify volumes: the message of
// EventModifyFailed and of the ModifyVolumeError condition.
func MessageUnsupported(driver string) string {
	return fmt.Sprintf("CSI driver %s does not support modifying volumes: controller MODIFY_VOLUME capability is not reported", driver)
}
