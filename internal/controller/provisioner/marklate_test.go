package provisioner

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
	"github.com/volplane/volplane/internal/provisioning"
)

// Config.MarkAfter: the claim's in-progress marks are written only for a
// create that runs longer, or whose answer leaves a volume possible.

// beforeCreate runs before every CreateVolume reaches the driver; it may
// answer in the driver's place (a non-nil error), or after it (after).
type beforeCreate struct {
	before func() error
	after  func() error
	calls  atomic.Int32
}

func (b *beforeCreate) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if _, ok := req.(*csipb.CreateVolumeRequest); !ok {
		return handler(ctx, req)
	}
	b.calls.Add(1)
	if b.before != nil {
		if err := b.before(); err != nil {
			return nil, err
		}
	}
	resp, err := handler(ctx, req)
	if err == nil && b.after != nil {
		if aerr := b.after(); aerr != nil {
			return nil, aerr
		}
	}
	return resp, err
}

func newInterceptedWorld(t *testing.T, b *beforeCreate, markAfter time.Duration) *world {
	w := newWorldOf(t, func(t testing.TB, node string, capacity int64) string {
		return hostpathtest.ServeIntercepted(t, node, capacity, b.intercept)
	}, claim(), class())
	w.markAfter = markAfter
	return w
}

// claimWrites are the claim updates the provisioner sent, in order.
func (w *world) claimWrites() []*v1.PersistentVolumeClaim {
	var out []*v1.PersistentVolumeClaim
	for _, a := range w.client.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "persistentvolumeclaims" {
			out = append(out, a.(k8stesting.UpdateAction).GetObject().(*v1.PersistentVolumeClaim))
		}
	}
	return out
}

// provisionedUnmarked says what is wrong unless the claim's PV exists and
// the claim carries none of the in-progress marks.
func (w *world) provisionedUnmarked() string {
	switch c := w.claim(); {
	case w.pv("pvc-uid-1") == nil:
		return "no PV"
	case provisioning.MarkedInProgress(c):
		return fmt.Sprintf("claim still marked: finalizers %v", c.Finalizers)
	}
	return ""
}

// A create the driver answers at once, with a volume or with a final
// error, writes nothing to the claim: the PV alone, or the event alone.
func TestCreateAnsweredAtOnceWritesNothingToTheClaim(t *testing.T) {
	t.Run("volume", func(t *testing.T) {
		w := newInterceptedWorld(t, &beforeCreate{}, time.Minute)
		w.start()
		w.eventually("PV made", func() string {
			if w.pv("pvc-uid-1") == nil || !w.sawEvent("Normal ProvisioningSucceeded") {
				return fmt.Sprintf("no PV yet; events %v", w.events)
			}
			return ""
		})
		if got := w.claimWrites(); len(got) != 0 {
			t.Errorf("%d claim writes, want none: first %+v", len(got), got[0].ObjectMeta)
		}
	})
	t.Run("final error", func(t *testing.T) {
		refused := &beforeCreate{before: func() error { return status.Error(codes.InvalidArgument, "injected: bad parameters") }}
		w := newInterceptedWorld(t, refused, time.Minute)
		w.start()
		w.eventually("refused twice", func() string {
			if n := refused.calls.Load(); n < 2 || !w.sawEvent("Warning ProvisioningFailed") {
				return fmt.Sprintf("%d creates; events %v", n, w.events)
			}
			return ""
		})
		if got := w.claimWrites(); len(got) != 0 {
			t.Errorf("%d claim writes, want none: first %+v", len(got), got[0].ObjectMeta)
		}
	})
}

// A create still running after MarkAfter has the claim marked while it
// runs (the driver here answers only once it sees the mark), and the
// marks go once the PV exists.
func TestSlowCreateIsMarkedWhileItRuns(t *testing.T) {
	var sawMark atomic.Bool
	var w *world
	slow := &beforeCreate{before: func() error {
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			c := w.claim()
			if hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer) && c.Annotations[provisioning.AnnCreateRequest] != "" &&
				c.Annotations[provisioning.AnnEndpointNode] != "" {
				sawMark.Store(true)
				return nil
			}
		}
		return nil
	}}
	w = newInterceptedWorld(t, slow, 50*time.Millisecond)
	w.start()
	w.eventually("PV made and the marks gone", w.provisionedUnmarked)
	if !sawMark.Load() {
		t.Error("the claim was not marked while its create ran")
	}
	if n := slow.calls.Load(); n != 1 {
		t.Errorf("%d creates, want 1", n)
	}
	if b := w.backend(); len(b) != 1 {
		t.Errorf("backend %v, want one volume", b)
	}
}

// An answer that leaves a volume possible (here: Unavailable after the
// driver made it) has the claim marked before the retry, which makes the
// PV of the same volume; then the marks go.
func TestCreateThatMayHaveMadeAVolumeMarksTheClaimBeforeItsRetry(t *testing.T) {
	var first atomic.Bool
	lost := &beforeCreate{after: func() error {
		if first.CompareAndSwap(false, true) {
			return status.Error(codes.Unavailable, "injected: answer lost after the volume was made")
		}
		return nil
	}}
	w := newInterceptedWorld(t, lost, time.Minute)
	w.start()
	w.eventually("PV made and the marks gone", w.provisionedUnmarked)
	writes := w.claimWrites()
	if len(writes) == 0 || !hasFinalizer(writes[0].Finalizers, provisioning.ClaimFinalizer) ||
		writes[0].Annotations[provisioning.AnnCreateRequest] == "" {
		t.Fatalf("claim writes %d; the first does not mark the claim in progress", len(writes))
	}
	if b := w.backend(); len(b) != 1 {
		t.Errorf("backend %v, want one volume", b)
	}
	if n := lost.calls.Load(); n != 2 {
		t.Errorf("%d creates, want 2", n)
	}
}
