package stacktest

import (
	"context"
	"fmt"

	"github.com/volplane/volplane/internal/controller/manager"
)

// Loops are volplane's control loops running in the background of a test,
// through manager.Run as `volplane controller` and `up` run them.
type Loops struct {
	cancel context.CancelFunc
	result chan error
	err    error
	ended  bool
}

// StartLoops runs manager.Run(cfg) until Stop.
func StartLoops(cfg manager.Config) *Loops {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loops{cancel: cancel, result: make(chan error, 1)}
	go func() { l.result <- manager.Run(ctx, cfg) }()
	return l
}

// Stop ends the loops and returns what Run returned; calling it again
// returns the same.
func (l *Loops) Stop() error {
	if !l.ended {
		l.cancel()
		l.err, l.ended = <-l.result, true
	}
	return l.err
}

// EndedEarly returns why the loops ended on their own, or nil while they
// run (or after Stop): tests waiting for a state check it so that a loop
// that died fails the test at once instead of at its timeout.
func (l *Loops) EndedEarly() error {
	if l.ended {
		return nil
	}
	select {
	case err := <-l.result:
		l.err, l.ended = err, true
		return fmt.Errorf("ended on their own: %v", err)
	default:
		return nil
	}
}
