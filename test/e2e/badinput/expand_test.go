package badinput

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Resizing bound claims past the edges. Shrinking below the capacity and
// resizing a claim whose class does not allow it are the API server's;
// growing past what the driver serves fails with the resizer's event, and
// (RecoverVolumeExpansionFailure) the user may lower the request again to
// a size that works.
func TestExpansionsAtTheirEdges(t *testing.T) {
	e := newEnv(t)
	names := []string{"grow-to-1ei", "grow-past-capacity", "grow-to-8ei-less-one", "grow-by-a-byte", "shrink"}
	var claims []edgeCase
	for _, n := range names {
		claims = append(claims, edgeCase{name: n, make: claimWith(), want: bound(provisioned)})
	}
	noExpansion := func(sc *storagev1.StorageClass) { sc.AllowVolumeExpansion = nil }
	claims = append(claims, edgeCase{name: "class-without-expansion", make: classWith(nil, noExpansion), want: bound(provisioned)})
	e.run(claims)

	resizeFailed := `Warning VolumeResizeFailed: resize volume "pvc-…" by resizer "hostpath.csi.volplane.io" failed: rpc error: code = OutOfRange desc = `
	tooLarge := func(bytes string) string {
		return resizeFailed + "capacity range: " + bytes + " bytes is more than the largest volume served (1125899906842624)"
	}
	e.run([]edgeCase{
		// Each is known never to fit (OutOfRange): the claim says so in
		// its allocated resource status.
		{name: "grow-to-1ei", make: requestOf("1Ei"),
			want: resizeIs(tooLarge("1152921504606846976"), "1Gi", corev1.PersistentVolumeClaimControllerResizeInfeasible)},
		{name: "grow-to-8ei-less-one", make: requestOf("9223372036854775807"),
			want: resizeIs(tooLarge("9223372036854775807"), "1Gi", corev1.PersistentVolumeClaimControllerResizeInfeasible)},
		{name: "grow-past-capacity", make: requestOf("200Gi"),
			want: resizeIs(resizeFailed+"expand volume vol-…214748364800 bytes requested, more than this driver's whole capacity of 107374182400 bytes: it can never fit",
				"1Gi", corev1.PersistentVolumeClaimControllerResizeInfeasible)},
		{name: "grow-by-a-byte", make: requestOf("1073741825"), want: resizeIs("Normal VolumeResizeSuccessful: Resize volume succeeded", "1073741825", "")},
		{name: "shrink", make: requestOf("512Mi"),
			rejected: `spec.resources.requests.storage: Forbidden: field can not be less than status.capacity`},
		// The PersistentVolumeClaimResize admission plugin.
		{name: "class-without-expansion", make: requestOf("2Gi"),
			rejected: `only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`},
	})

	e.run([]edgeCase{
		// Recovery: back to a size the driver serves.
		{name: "grow-to-1ei", make: requestOf("2Gi"), want: resizeIs("Normal VolumeResizeSuccessful: Resize volume succeeded", "2Gi", "")},
		// Lowering the failed request is allowed only down to the
		// capacity the claim has.
		{name: "grow-past-capacity", make: requestOf("512Mi"),
			rejected: `spec.resources.requests.storage: Forbidden: field can not be less than status.capacity`},
	})
}

// requestOf sets the case's claim's request to q.
func requestOf(q string) maker {
	return func(e *env, name string) error { return e.request(name, q) }
}

// resizeIs says what is missing unless the claim has an event matching
// event, capacity q, and allocated resource status st ("" for none).
func resizeIs(event, q string, st corev1.ClaimResourceStatus) func(e *env, name string) string {
	return all(capacity(q), func(e *env, name string) string {
		if got := e.getClaim(name).Status.AllocatedResourceStatuses[corev1.ResourceStorage]; got != st {
			return fmt.Sprintf("allocated resource status %q, want %q", got, st)
		}
		return e.hasEvent(e.ns, name, event)
	})
}
