package stacktest

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/cluster"
)

// LoopDeps are what a test builds one loop from.
type LoopDeps struct {
	// Client is unthrottled, and its writes go to the run's WriteLog.
	Client kubernetes.Interface
	// Informers are started once the loop is built.
	Informers informers.SharedInformerFactory
	// Recorder records events from component through a client of its
	// own, whose writes are not logged (as the manager's events).
	Recorder func(component string) record.EventRecorder
}

// LoopRun is one loop a test runs on the package's control plane.
type LoopRun struct {
	// Writes logs the loop's API writes.
	Writes *WriteLog
	cancel context.CancelFunc
	ended  chan struct{}
	err    error
}

// Build builds one loop from what a test gives it.
type Build func(LoopDeps) (interface{ Run(context.Context) error }, error)

// StartLoop builds a loop with build and runs it until the test ends;
// crashAt > 0 stops it right after that many writes.
func StartLoop(t testing.TB, crashAt int, build Build) *LoopRun {
	t.Helper()
	r, err := RunLoop(ControlPlane(t), crashAt, build)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// RunLoop is StartLoop for a loop that outlives one test (a package's
// TestMain setup runs it for all its tests): the caller stops it.
func RunLoop(cp *cluster.ControlPlane, crashAt int, build Build) (*LoopRun, error) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &LoopRun{Writes: NewWriteLog(crashAt, cancel), cancel: cancel, ended: make(chan struct{})}
	cfg := rest.CopyConfig(cp.RESTConfig)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Wrap(r.Writes.Wrap)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		cancel()
		return nil, err
	}
	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cp.Client.CoreV1().Events("")})
	factory := informers.NewSharedInformerFactory(client, 0)
	loop, err := build(LoopDeps{Client: client, Informers: factory, Recorder: func(component string) record.EventRecorder {
		return events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	}})
	if err != nil {
		cancel()
		events.Shutdown()
		return nil, err
	}
	factory.Start(ctx.Done())
	go func() {
		r.err = loop.Run(ctx)
		factory.Shutdown()
		events.Shutdown()
		close(r.ended)
	}()
	return r, nil
}

// Stop stops the loop and waits until it has returned.
func (r *LoopRun) Stop() {
	r.cancel()
	<-r.ended
}

// Ended is closed once the loop has returned; Err is then its error.
func (r *LoopRun) Ended() <-chan struct{} { return r.ended }

// Err is the loop's error, once Ended is closed.
func (r *LoopRun) Err() error { return r.err }

// EndedEarly says why the loop ended, or nil while it runs: for the alive
// check of Eventually.
func (r *LoopRun) EndedEarly() error {
	select {
	case <-r.ended:
		return fmt.Errorf("the loop ended: %v", r.err)
	default:
		return nil
	}
}
