package csierror

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Each meaning of "final" as its reference has it: the external-provisioner
// (Final) and the external-resizer and kubelet (OperationFinal) differ only
// in ResourceExhausted; an error without a status is never final.
func TestFinalAsEachReference(t *testing.T) {
	wrap := func(c codes.Code) error { return fmt.Errorf("wrapped: %w", status.Error(c, "x")) }
	for _, tc := range []struct {
		err              error
		final, operation bool
	}{
		{status.Error(codes.Canceled, ""), false, false},
		{status.Error(codes.DeadlineExceeded, ""), false, false},
		{status.Error(codes.Unavailable, ""), false, false},
		{status.Error(codes.Aborted, ""), false, false},
		{wrap(codes.Aborted), false, false},
		{errors.New("connection reset"), false, false},
		{status.Error(codes.ResourceExhausted, ""), true, false},
		{status.Error(codes.InvalidArgument, ""), true, true},
		{status.Error(codes.NotFound, ""), true, true},
		{status.Error(codes.Internal, ""), true, true},
		{status.Error(codes.Unimplemented, ""), true, true},
		{wrap(codes.OutOfRange), true, true},
		{nil, false, false},
	} {
		if got := Final(tc.err); got != tc.final {
			t.Errorf("Final(%v) = %v, want %v", tc.err, got, tc.final)
		}
		if got := OperationFinal(tc.err); got != tc.operation {
			t.Errorf("OperationFinal(%v) = %v, want %v", tc.err, got, tc.operation)
		}
		if tc.err != nil && (Classify(tc.err) == ClassFinal) != tc.final {
			t.Errorf("Classify(%v) = %s", tc.err, Classify(tc.err))
		}
	}
}

// Expansion takes three codes as infeasible, modification only one.
func TestInfeasibleAsEachReference(t *testing.T) {
	for _, c := range []codes.Code{codes.InvalidArgument, codes.OutOfRange, codes.NotFound} {
		if !ExpandInfeasible(status.Error(c, "x")) {
			t.Errorf("ExpandInfeasible(%s) = false", c)
		}
	}
	if ExpandInfeasible(status.Error(codes.Internal, "x")) {
		t.Error("Internal is infeasible for expansion")
	}
	if !ModifyInfeasible(status.Error(codes.InvalidArgument, "x")) || ModifyInfeasible(status.Error(codes.OutOfRange, "x")) {
		t.Error("only InvalidArgument is infeasible for modification")
	}
	if c, ok := Code(errors.New("local")); ok || c != codes.Unknown {
		t.Errorf("Code of a local error = %s, %v", c, ok)
	}
}
