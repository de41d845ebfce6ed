package badinput

import (
	"fmt"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// A claim refused for good is retried with backoff, and each retry writes
// the claim a bounded number of times: for two seconds, the writes stay
// within what the backoff allows. Regression: the provisioner's own
// writes (the in-progress finalizer put on and taken off, the pin moved)
// woke the claim at once, hundreds of writes a second.
func TestRefusedClaimsAreRetriedWithBackoff(t *testing.T) {
	e := newEnv(t)
	cases := []edgeCase{
		// Refused by the driver asked (OutOfRange): finalizer on, off.
		{name: "absurd-size", make: claimWith(size("1Ei")),
			want: pending("Warning ProvisioningFailed: rpc error: code = OutOfRange desc = ")},
		// No room on any node: the pin also moves to the other node.
		{name: "no-room-anywhere", make: claimWith(size("200Gi")),
			want: pending("Warning ProvisioningFailed: rpc error: code = ResourceExhausted desc = ")},
		{name: "bad-attributes", make: vacClaim(hostpath.DriverName, map[string]string{hostpath.ParamIOPS: "0"}),
			want: pending("Warning ProvisioningFailed: rpc error: code = InvalidArgument desc = ")},
		// On a node the scheduler chose, a final error gives the choice
		// back (the selected node taken off); the scheduler's own backoff
		// paces the next choice.
		{name: "refused-on-chosen-node", make: both(
			classWith(map[string]string{"csi.storage.k8s.io/foo": "x"}, func(sc *storagev1.StorageClass) {
				sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
			}),
			func(e *env, name string) error { return e.pod(name, name, false) }),
			want: pending(`Warning ProvisioningFailed: failed to strip CSI Parameters of prefixed keys: found unknown parameter key "csi.storage.k8s.io/foo" with reserved namespace csi.storage.k8s.io/`)},
	}
	e.run(cases)
	stacktest.Holds(t, "writes within the backoff", 2*time.Second, func() string {
		allowed := writesAllowed(time.Since(e.began))
		for _, c := range cases {
			if n := len(e.writesTo(c.name)); n > allowed {
				return fmt.Sprintf("%s: %d writes in %s, more than %d", c.name, n, time.Since(e.began), allowed)
			}
		}
		return ""
	})
}
