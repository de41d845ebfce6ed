package csi

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Class says what a failed CSI call means for the caller.
type Class int

const (
	// Final: the driver answered and refused; the operation is not running
	// and retrying the same request will not help by itself.
	Final Class = iota
	// Transient: the call may still be in progress in the driver (or never
	// arrived); the caller must retry the same request and keep every
	// decision the request was built from (e.g. the selected node).
	Transient
)

func (c Class) String() string {
	if c == Transient {
		return "transient"
	}
	return "final"
}

// Classify tells transient from final errors. The transient codes are the
// ones the CSI spec and the Kubernetes sidecars treat as "the operation may
// still be running": Canceled, DeadlineExceeded, Unavailable and Aborted.
// An error that is not a gRPC status at all (a local timeout of the context,
// a broken connection) is transient too: we do not know what the driver did.
func Classify(err error) Class {
	st, ok := status.FromError(err)
	if !ok {
		return Transient
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.Aborted:
		return Transient
	}
	return Final
}

// IsFinal is Classify(err) == Final for a non-nil err.
func IsFinal(err error) bool { return err != nil && Classify(err) == Final }

// IsOutOfRoom says whether the answer is ResourceExhausted. It is Final, as
// the external-provisioner's checkError takes it: the CSI spec says the
// driver made nothing and another topology may have room. gRPC uses the
// same code for its own limits, though, and a driver may answer it while
// it is still finishing the volume; so a caller that would lose track of a
// volume on this answer (drop its record of the attempt, or ask another
// node) first asks the same endpoint the same request again: an idempotent
// driver that made the volume returns it then, a pending one answers
// Aborted, and only a second ResourceExhausted confirms that nothing exists.
func IsOutOfRoom(err error) bool { return status.Code(err) == codes.ResourceExhausted }

// IsNotFound says whether the driver answered NotFound.
func IsNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// IsInUse says whether NodeExpandVolume was refused with
// FailedPrecondition: the CSI spec's "volume in use", a volume that cannot
// grow while staged or published. The kubelet then stops expanding it
// online and lets pods mount it all the same.
func IsInUse(err error) bool { return status.Code(err) == codes.FailedPrecondition }

// StatusCode is the gRPC status code the driver answered with; ok is false
// for an error that carries none (a local error of ours, not the driver's).
func StatusCode(err error) (c codes.Code, ok bool) {
	st, ok := status.FromError(err)
	return st.Code(), ok
}

// code is the status code of err for metrics ("OK" for nil).
func code(err error) string { return status.Code(err).String() }

// IsInfeasible says whether a resize was refused in a way retrying the
// same size will not fix: InvalidArgument, OutOfRange or NotFound (the
// external-resizer's IsInfeasibleError). The resizer then marks the claim
// ControllerResizeInfeasible and retries slowly, so a user may lower the
// request. Modify takes only InvalidArgument as infeasible.
func IsInfeasible(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.OutOfRange, codes.NotFound:
		return true
	}
	return false
}
