// Package csierror is the one home of what a CSI driver's answer means to
// its caller: whether the operation is over (final) or may still be running
// in the driver (transient), and the few codes the loops and the node agent
// act on by name. It imports only gRPC's codes and status, so pure cores may
// use it.
//
// Kubernetes has two meanings of "final", and each caller names the one it
// follows:
//   - Final: the external-provisioner's and external-attacher's (checkError,
//     isFinalError): ResourceExhausted is final, as the CSI spec says the
//     driver made nothing and another topology may have room.
//   - OperationFinal: the external-resizer's IsFinalError and the kubelet's
//     isFinalError: ResourceExhausted is transient too.
//
// In both, an error that carries no gRPC status (a local timeout, a broken
// connection) is transient: we do not know what the driver did.
package csierror

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Class says what a failed CSI call means for the caller.
type Class int

const (
	// ClassFinal: the driver answered and refused; the operation is not
	// running and retrying the same request will not help by itself.
	ClassFinal Class = iota
	// ClassTransient: the call may still be in progress in the driver (or
	// never arrived); the caller must retry the same request and keep every
	// decision the request was built from (e.g. the selected node).
	ClassTransient
)

func (c Class) String() string {
	if c == ClassTransient {
		return "transient"
	}
	return "final"
}

// Classify tells transient from final errors in the external-provisioner's
// meaning: Canceled, DeadlineExceeded, Unavailable and Aborted (and any
// error without a status) are transient, every other answer is final.
func Classify(err error) Class {
	st, ok := status.FromError(err)
	if !ok {
		return ClassTransient
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.Aborted:
		return ClassTransient
	}
	return ClassFinal
}

// Final is Classify(err) == ClassFinal for a non-nil err: the
// external-provisioner's and external-attacher's meaning.
func Final(err error) bool { return err != nil && Classify(err) == ClassFinal }

// OperationFinal says whether a non-nil err means the operation is over in
// the external-resizer's and the kubelet's meaning (IsFinalError,
// isFinalError): as Final, but ResourceExhausted too may still be running.
func OperationFinal(err error) bool { return Final(err) && !OutOfRoom(err) }

// OutOfRoom says whether the answer is ResourceExhausted. The
// external-provisioner takes it as final: the CSI spec says the driver made
// nothing and another topology may have room. gRPC uses the same code for
// its own limits, though, and a driver may answer it while it is still
// finishing the volume; so a caller that would lose track of a volume on
// this answer (drop its record of the attempt, or ask another node) first
// asks the same endpoint the same request again: an idempotent driver that
// made the volume returns it then, a pending one answers Aborted, and only a
// second ResourceExhausted confirms that nothing exists.
func OutOfRoom(err error) bool { return status.Code(err) == codes.ResourceExhausted }

// NotFound says whether the driver answered NotFound: for a delete or an
// unpublish, the work is already done.
func NotFound(err error) bool { return status.Code(err) == codes.NotFound }

// AlreadyExists says whether the driver answered AlreadyExists: a create
// of that name exists with other parameters.
func AlreadyExists(err error) bool { return status.Code(err) == codes.AlreadyExists }

// InUse says whether an expansion was refused with FailedPrecondition: the
// CSI spec's "volume in use", a volume that cannot grow while staged or
// published. For NodeExpandVolume the kubelet then stops expanding it
// online and lets pods mount it all the same; for ControllerExpandVolume
// the resizer remembers the refusal until the volume is unused.
func InUse(err error) bool { return status.Code(err) == codes.FailedPrecondition }

// ExpandInfeasible says whether a resize was refused in a way retrying the
// same size will not fix: InvalidArgument, OutOfRange or NotFound (the
// external-resizer's IsInfeasibleError). The claim is then marked
// ControllerResizeInfeasible (NodeResizeInfeasible on the node) and
// retried slowly, so a user may lower the request.
func ExpandInfeasible(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.OutOfRange, codes.NotFound:
		return true
	}
	return false
}

// ModifyInfeasible says whether ControllerModifyVolume refused the
// parameters themselves (InvalidArgument, the external-resizer's modify
// controller): retrying the same class will not help, so the claim is
// marked Infeasible and retried slowly. Other final errors, even NotFound,
// stay InProgress, unlike ExpandInfeasible.
func ModifyInfeasible(err error) bool { return status.Code(err) == codes.InvalidArgument }

// Code is the gRPC status code the driver answered with; ok is false for an
// error that carries none (a local error of ours, not the driver's).
func Code(err error) (c codes.Code, ok bool) {
	st, ok := status.FromError(err)
	return st.Code(), ok
}
