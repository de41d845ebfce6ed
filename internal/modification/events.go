package modification

import (
	"fmt"

	"github.com/volplane/volplane/internal/csierror"
)

// The event reasons, as the external-resizer's (pkg/util/events.go).
const (
	EventModify           = "VolumeModify"
	EventModifyFailed     = "VolumeModifyFailed"
	EventModifySuccessful = "VolumeModifySuccessful"
	EventModifyCanceled   = "VolumeModifyCanceled"
)

// MessageCanceled is the message of EventModifyCanceled.
const MessageCanceled = "Cancelled modify."

// MessageModify is the message of EventModify.
func MessageModify(claim, class string) string {
	return fmt.Sprintf("external resizer is modifying volume %s with vac %s", claim, class)
}

// MessageModified is the message of EventModifySuccessful.
func MessageModified(claim, class string) string {
	return fmt.Sprintf("external resizer modified volume %s with vac %s successfully", claim, class)
}

// MessageClassMissing is the message of EventModifyFailed for a class that
// does not exist.
func MessageClassMissing(class string) string {
	return fmt.Sprintf("VAC %q does not exist.", class)
}

// MessageFailed is the message of EventModifyFailed for a failed call: the
// error, and for one the driver may still be working on, which target it
// keeps.
func MessageFailed(err error, class string) string {
	if !csierror.OperationFinal(err) { // the external-resizer's IsFinalError: the driver may still be working
		return err.Error() + ". Still modifying to VAC " + class
	}
	return err.Error()
}
