package badinput

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/bundle"
)

// Sizes at and past the edges: the smallest are served (rounded up to
// whole bytes), the absurd ones fail with the driver's reason. Zero and
// negative sizes are the API server's (TestTheAPIServerRejects).
func TestSizesAtTheirEdges(t *testing.T) {
	e := newEnv(t)
	outOfRange := func(bytes string) func(e *env, name string) string {
		return pending("Warning ProvisioningFailed: rpc error: code = OutOfRange desc = capacity range: " + bytes +
			" bytes is more than the largest volume served (1125899906842624)")
	}
	e.run([]edgeCase{
		{name: "one-byte", make: claimWith(size("1")), want: all(bound(provisioned), capacity("1"))},
		// Fractions of a byte round up, as Quantity.Value does.
		{name: "one-and-a-half-bytes", make: claimWith(size("1.5")), want: all(bound(provisioned), capacity("2"))},
		{name: "a-tenth-of-a-byte", make: claimWith(size("100m")), want: all(bound(provisioned), capacity("1"))},
		{name: "one-exbibyte", make: claimWith(size("1Ei")), want: outOfRange("1152921504606846976")},
		{name: "eight-exbibytes-less-one", make: claimWith(size("9223372036854775807")), want: outOfRange("9223372036854775807")},
		// Beyond int64: Quantity.Value saturates, so the message names
		// 8Ei-1 bytes rather than what the user wrote (as the reference).
		{name: "hundred-exbibytes", make: claimWith(size("100Ei")), want: outOfRange("9223372036854775807")},
		// More than the driver's whole capacity: ResourceExhausted, so
		// every node is tried and the claim retried with backoff (another
		// node's driver may be larger); expansion of the same size is
		// OutOfRange, "it can never fit", as a volume cannot move
		// (TestExpansionsAtTheirEdges).
		{name: "more-than-capacity", make: claimWith(size("200Gi")),
			want: pending(`Warning ProvisioningFailed: rpc error: code = ResourceExhausted desc = volume "pvc-`)},
		{name: "network-more-than-capacity", make: claimWith(size("200Gi"), classNamed(bundle.NetworkClass)),
			want: pending(`Warning ProvisioningFailed: rpc error: code = ResourceExhausted desc = volume "pvc-`)},
		// A limit below the request is accepted by the API server and not
		// sent to the driver (the reference sends only the request).
		{name: "limit-below-request", make: claimWith(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}
		}), want: all(bound(provisioned), capacity("1Gi"))},
	})
}

// capacity says what is missing unless the case's claim has capacity q.
func capacity(q string) func(e *env, name string) string {
	return func(e *env, name string) string {
		if got := e.getClaim(name).Status.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse(q)) != 0 {
			return fmt.Sprintf("capacity %s, want %s", got.String(), q)
		}
		return ""
	}
}
