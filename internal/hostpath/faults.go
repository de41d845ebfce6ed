package hostpath

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// Faults makes the controller service misbehave on purpose, for soak tests:
// each call of a faulted method fails before it is done (Unavailable), is
// done and then reported as timed out (DeadlineExceeded: the CO must
// retry and find the work already there), or is delayed, each with its own
// probability. The zero value injects nothing; nothing is injected by
// default.
//
// Whether a call is faulted is drawn from Seed, the method, the call's
// subject (the volume name or ID, and the node) and how many calls of that
// method on that subject came before: a run with the same seed faults the
// same calls whatever order concurrent calls arrive in.
type Faults struct {
	Seed int64
	// Unavailable, TimedOut and Delayed are probabilities per call; their
	// sum is at most 1.
	Unavailable float64
	TimedOut    float64
	Delayed     float64
	// MaxDelay bounds a delay; each delayed call waits a drawn fraction of it.
	MaxDelay time.Duration
}

// faultedMethods are the controller calls faults apply to: the ones the
// provisioner, the attacher, the resizer and the snapshotter make that
// change something.
var faultedMethods = map[string]func(req any) string{
	csi.Controller_CreateVolume_FullMethodName: func(req any) string { return req.(*csi.CreateVolumeRequest).GetName() },
	csi.Controller_DeleteVolume_FullMethodName: func(req any) string { return req.(*csi.DeleteVolumeRequest).GetVolumeId() },
	csi.Controller_ControllerPublishVolume_FullMethodName: func(req any) string {
		r := req.(*csi.ControllerPublishVolumeRequest)
		return r.GetVolumeId() + "@" + r.GetNodeId()
	},
	csi.Controller_ControllerUnpublishVolume_FullMethodName: func(req any) string {
		r := req.(*csi.ControllerUnpublishVolumeRequest)
		return r.GetVolumeId() + "@" + r.GetNodeId()
	},
	csi.Controller_ControllerExpandVolume_FullMethodName: func(req any) string {
		return req.(*csi.ControllerExpandVolumeRequest).GetVolumeId()
	},
	csi.Controller_CreateSnapshot_FullMethodName: func(req any) string { return req.(*csi.CreateSnapshotRequest).GetName() },
	csi.Controller_DeleteSnapshot_FullMethodName: func(req any) string { return req.(*csi.DeleteSnapshotRequest).GetSnapshotId() },
	csi.GroupController_CreateVolumeGroupSnapshot_FullMethodName: func(req any) string {
		return req.(*csi.CreateVolumeGroupSnapshotRequest).GetName()
	},
	csi.GroupController_DeleteVolumeGroupSnapshot_FullMethodName: func(req any) string {
		return req.(*csi.DeleteVolumeGroupSnapshotRequest).GetGroupSnapshotId()
	},
}

// Enabled says whether f injects anything.
func (f Faults) Enabled() bool { return f.Unavailable > 0 || f.TimedOut > 0 || f.Delayed > 0 }

// check rejects probabilities that are not probabilities.
func (f Faults) check() error {
	for name, p := range map[string]float64{"unavailable": f.Unavailable, "timeout": f.TimedOut, "delay": f.Delayed} {
		if p < 0 || p > 1 || math.IsNaN(p) {
			return fmt.Errorf("faults: %s=%v is not a probability (0 to 1)", name, p)
		}
	}
	if sum := f.Unavailable + f.TimedOut + f.Delayed; sum > 1 {
		return fmt.Errorf("faults: unavailable+timeout+delay is %v, more than 1", sum)
	}
	if f.Delayed > 0 && f.MaxDelay <= 0 {
		return fmt.Errorf("faults: delay=%v needs a positive max-delay", f.Delayed)
	}
	return nil
}

// ParseFaults reads a fault spec such as
// "seed=7,unavailable=0.1,timeout=0.1,delay=0.1,max-delay=2s"; every key
// is optional and "" means no faults.
func ParseFaults(spec string) (Faults, error) {
	var f Faults
	if strings.TrimSpace(spec) == "" {
		return f, nil
	}
	for field := range strings.SplitSeq(spec, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(field), "=")
		if !ok {
			return f, fmt.Errorf("faults: %q is not key=value", field)
		}
		var err error
		switch key {
		case "seed":
			f.Seed, err = strconv.ParseInt(value, 10, 64)
		case "unavailable":
			f.Unavailable, err = strconv.ParseFloat(value, 64)
		case "timeout":
			f.TimedOut, err = strconv.ParseFloat(value, 64)
		case "delay":
			f.Delayed, err = strconv.ParseFloat(value, 64)
		case "max-delay":
			f.MaxDelay, err = time.ParseDuration(value)
		default:
			return f, fmt.Errorf("faults: unknown key %q (want seed, unavailable, timeout, delay, max-delay)", key)
		}
		if err != nil {
			return f, fmt.Errorf("faults: %s: %w", key, err)
		}
	}
	return f, f.check()
}

// String is the spec ParseFaults reads back.
func (f Faults) String() string {
	if !f.Enabled() {
		return ""
	}
	return fmt.Sprintf("seed=%d,unavailable=%v,timeout=%v,delay=%v,max-delay=%s", f.Seed, f.Unavailable, f.TimedOut, f.Delayed, f.MaxDelay)
}

// faultKind is what happens to one call.
type faultKind int

const (
	noFault faultKind = iota
	faultUnavailable
	faultTimedOut
	faultDelayed
)

func (k faultKind) String() string {
	return [...]string{"none", "unavailable", "timed out after doing the call", "delayed"}[k]
}

// faultInjector decides and injects the faults of one driver.
type faultInjector struct {
	f        Faults
	mu       sync.Mutex
	calls    map[string]uint64 // by method and subject: calls seen so far
	injected atomic.Int64
}

func newFaultInjector(f Faults) *faultInjector {
	return &faultInjector{f: f, calls: map[string]uint64{}}
}

// draw returns two numbers in [0, 1) for the n-th call of method on subject.
func (fi *faultInjector) draw(method, subject string) (kind, amount float64) {
	fi.mu.Lock()
	key := method + "\x00" + subject
	n := fi.calls[key]
	fi.calls[key] = n + 1
	fi.mu.Unlock()
	h := fnv.New128a()
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], uint64(fi.f.Seed))
	binary.LittleEndian.PutUint64(buf[8:], n)
	h.Write(buf[:])
	h.Write([]byte(key))
	sum := h.Sum(nil)
	unit := func(b []byte) float64 { return float64(binary.LittleEndian.Uint64(b)>>11) / (1 << 53) }
	return unit(sum[:8]), unit(sum[8:])
}

// decide is the fault for a draw: a pure function of the probabilities.
func (f Faults) decide(u float64) faultKind {
	switch {
	case u < f.Unavailable:
		return faultUnavailable
	case u < f.Unavailable+f.TimedOut:
		return faultTimedOut
	case u < f.Unavailable+f.TimedOut+f.Delayed:
		return faultDelayed
	}
	return noFault
}

// intercept is the gRPC interceptor: it runs inside the driver's logging,
// so injected errors are logged like real ones.
func (fi *faultInjector) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	subject, faulted := faultedMethods[info.FullMethod]
	if !faulted {
		return handler(ctx, req)
	}
	u, amount := fi.draw(info.FullMethod, subject(req))
	kind := fi.f.decide(u)
	resp, err := fi.inject(ctx, kind, amount, req, handler)
	// Every faulted method's call is logged with its subject and outcome,
	// so that a soak's violation can be traced call by call.
	klog.FromContext(ctx).Info("Controller call", "method", info.FullMethod, "subject", subject(req),
		"fault", kind.String(), "code", status.Code(err).String())
	return resp, err
}

// inject does the call with the fault of kind.
func (fi *faultInjector) inject(ctx context.Context, kind faultKind, amount float64, req any, handler grpc.UnaryHandler) (any, error) {
	if kind == noFault {
		return handler(ctx, req)
	}
	fi.injected.Add(1)
	switch kind {
	case faultUnavailable:
		return nil, status.Error(codes.Unavailable, "injected fault: driver unavailable, call not done")
	case faultTimedOut:
		if _, err := handler(ctx, req); err != nil {
			return nil, err
		}
		return nil, status.Error(codes.DeadlineExceeded, "injected fault: call done, but reported as timed out")
	}
	select {
	case <-time.After(time.Duration(amount * float64(fi.f.MaxDelay))):
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return handler(ctx, req)
}

// InjectedFaults is how many calls Config.Faults has faulted so far.
func (d *Driver) InjectedFaults() int64 { return d.faults.injected.Load() }

// FaultInterceptor injects f into the calls of any CSI server it
// intercepts, as the bundled driver injects Config.Faults: the fault proxy
// in front of a user's driver uses it. Injected counts the calls faulted.
type FaultInterceptor struct{ fi *faultInjector }

// NewFaultInterceptor returns an interceptor injecting f.
func NewFaultInterceptor(f Faults) (*FaultInterceptor, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	return &FaultInterceptor{fi: newFaultInjector(f)}, nil
}

// Intercept is the gRPC unary server interceptor.
func (f *FaultInterceptor) Intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	return f.fi.intercept(ctx, req, info, handler)
}

// Injected is how many calls were faulted so far.
func (f *FaultInterceptor) Injected() int64 { return f.fi.injected.Load() }
