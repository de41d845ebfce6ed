package cluster

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// group runs long-lived components that share one cancellation. A component
// that returns before the group is stopped has failed; its error goes to the
// failed channel (the first few are kept, later ones dropped).
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	failed chan<- error
}

func startGroup(parent context.Context, failed chan<- error) *group {
	// Components outlive the context Start was called with: they stop in
	// Stop, never because the caller's start-up context ended.
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	return &group{ctx: ctx, cancel: cancel, failed: failed}
}

func (g *group) run(name string, fn func(context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := fn(klog.NewContext(g.ctx, klog.FromContext(g.ctx).WithName(name)))
		if g.ctx.Err() != nil {
			return
		}
		if err == nil {
			err = fmt.Errorf("%s stopped unexpectedly", name)
		} else {
			err = fmt.Errorf("%s: %w", name, err)
		}
		select {
		case g.failed <- err:
		default:
		}
	}()
}

// stop cancels the group and waits up to timeout for its components.
func (g *group) stop(timeout time.Duration) {
	g.cancel()
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		klog.Background().Info("Components did not stop in time; leaving them", "timeout", timeout)
	}
}

// redirectKlog sends the components' logs (klog is process-wide) to w, so the
// terminal of `volplane up` and test output stay readable.
// Errors too: klog would otherwise copy them to stderr as well.
func redirectKlog(w io.Writer) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(w)
}
