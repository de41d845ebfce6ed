package quantity

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
)

// maxBytes is the largest size a CSI request can carry (its byte counts
// are int64).
var maxBytes = *resource.NewQuantity(math.MaxInt64, resource.BinarySI)

// Bytes is q as the byte count of a CSI request, rounded up to a whole
// byte; false when it is negative or beyond the largest int64. Every size
// a claim gives (user-written: any number the API accepts) is converted
// here, never with q.Value(), which wraps such a number around to a small
// size (2^64 + 1Gi becomes 1Gi) or to 0.
func Bytes(q resource.Quantity) (int64, bool) {
	if q.Sign() < 0 || q.Cmp(maxBytes) > 0 {
		return 0, false
	}
	return q.Value(), true
}

// TooLarge is why a size no CSI request can carry is refused: the
// resizer's ControllerResizeError condition and VolumeResizeFailed event,
// the provisioner's ProvisioningFailed event.
func TooLarge(size resource.Quantity) error {
	return fmt.Errorf("the size %s is more than a volume can be asked for (at most %d bytes); lower the request", size.String(), int64(math.MaxInt64))
}
