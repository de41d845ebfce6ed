package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// LeaseTimings are the leader election settings, as kube-controller-manager
// names them (--leader-elect-lease-duration, -renew-deadline, -retry-period).
type LeaseTimings struct {
	// LeaseDuration is how long others wait after the last renewal before
	// they take the Lease: the longest a crashed leader leaves the loops idle.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// stops its loops.
	RenewDeadline time.Duration
	// RetryPeriod is the pause between two tries to acquire or renew.
	RetryPeriod time.Duration
}

// DefaultLeaderElection are kube-controller-manager's defaults.
var DefaultLeaderElection = LeaseTimings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}

// orDefaults fills each zero field from DefaultLeaderElection.
func (t LeaseTimings) orDefaults() LeaseTimings {
	if t.LeaseDuration == 0 {
		t.LeaseDuration = DefaultLeaderElection.LeaseDuration
	}
	if t.RenewDeadline == 0 {
		t.RenewDeadline = DefaultLeaderElection.RenewDeadline
	}
	if t.RetryPeriod == 0 {
		t.RetryPeriod = DefaultLeaderElection.RetryPeriod
	}
	return t
}

// validate states client-go's own rules (leaderelection.NewLeaderElector),
// which RunOrDie would otherwise enforce with a panic.
func (t LeaseTimings) validate() error {
	switch {
	case t.LeaseDuration <= 0 || t.RenewDeadline <= 0 || t.RetryPeriod <= 0:
		return fmt.Errorf("leader election timings must be positive: lease duration %s, renew deadline %s, retry period %s",
			t.LeaseDuration, t.RenewDeadline, t.RetryPeriod)
	case t.LeaseDuration <= t.RenewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration %s must be longer than --leader-elect-renew-deadline %s",
			t.LeaseDuration, t.RenewDeadline)
	case float64(t.RenewDeadline) <= leaderelection.JitterFactor*float64(t.RetryPeriod):
		return fmt.Errorf("--leader-elect-renew-deadline %s must be longer than %.1f × --leader-elect-retry-period %s",
			t.RenewDeadline, leaderelection.JitterFactor, t.RetryPeriod)
	}
	return nil
}

// runElected runs body while holding the Lease. On shutdown the loops stop
// first and the Lease is released after (ReleaseOnCancel): the next leader
// starts at once, so no write of ours may still be in flight by then.
func runElected(ctx context.Context, cfg Config, body func(context.Context) error) error {
	client, err := kubernetes.NewForConfig(cfg.REST)
	if err != nil {
		return fmt.Errorf("leader election client: %w", err)
	}
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s_%d_%d", host, os.Getpid(), time.Now().UnixNano())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, cfg.LeaderElectNamespace, cfg.LeaderElectName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	// The election outlives ctx until the loops have stopped.
	electCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()
	s := &succession{stop: stopElection, done: make(chan error, 1)}
	stopWatch := context.AfterFunc(ctx, s.shutDown)
	defer stopWatch()
	timings := cfg.LeaderElection.orDefaults()
	logger := klog.FromContext(ctx)
	logger.Info("Waiting for the leader election Lease", "lease", cfg.LeaderElectNamespace+"/"+cfg.LeaderElectName, "identity", id)
	leaderelection.RunOrDie(electCtx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true, Name: cfg.LeaderElectName,
		LeaseDuration: timings.LeaseDuration, RenewDeadline: timings.RenewDeadline, RetryPeriod: timings.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				logger.Info("Leading", "lease", cfg.LeaderElectNamespace+"/"+cfg.LeaderElectName, "identity", id)
				s.lead(ctx, leading, body)
			},
			OnStoppedLeading: func() {},
		},
	})
	if !s.started() {
		if ctx.Err() != nil {
			return nil // ctx ended before we led
		}
		return errors.New("leader election lost")
	}
	// RunOrDie returns when leadership ends; the body's context is cancelled
	// then, so this wait is short.
	if err := <-s.done; err != nil {
		return err
	}
	if ctx.Err() == nil {
		return errors.New("leader election lost")
	}
	return nil
}

// succession orders the end of a term: the loops stop, then the election.
type succession struct {
	mu       sync.Mutex
	leading  bool
	stopping bool
	stop     func()
	done     chan error
}

// shutDown ends the election at once unless the loops run; then lead ends
// it once they have stopped.
func (s *succession) shutDown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	if !s.leading {
		s.stop()
	}
}

// lead runs body until shutdown (ctx) or the loss of the Lease (leading),
// then ends the election, which releases the Lease.
func (s *succession) lead(ctx, leading context.Context, body func(context.Context) error) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	s.leading = true
	s.mu.Unlock()
	bodyCtx, cancel := context.WithCancel(leading)
	stopAfter := context.AfterFunc(ctx, cancel)
	err := body(bodyCtx)
	stopAfter()
	cancel()
	s.done <- err
	s.stop()
}

func (s *succession) started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leading
}
