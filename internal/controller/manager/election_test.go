package manager

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// Timings client-go would refuse with a panic in RunOrDie are refused by
// Validate, naming the flags.
func TestLeaderElectionTimingsAreCheckedUpFront(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:1"}
	cfg := func(lt LeaseTimings) Config {
		return Config{REST: rc, Controllers: []string{Binder}, LeaderElect: true,
			LeaderElectNamespace: "kube-system", LeaderElectName: "x", LeaderElection: lt}
	}
	cases := []struct {
		timings LeaseTimings
		want    string // "" = valid
	}{
		{LeaseTimings{}, ""}, // kube-controller-manager's defaults
		{LeaseTimings{LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}, ""},
		{LeaseTimings{LeaseDuration: 5 * time.Second}, "--leader-elect-lease-duration 5s must be longer than --leader-elect-renew-deadline 10s"},
		{LeaseTimings{RetryPeriod: 9 * time.Second}, "--leader-elect-renew-deadline 10s must be longer than 1.2 × --leader-elect-retry-period 9s"},
		{LeaseTimings{RetryPeriod: -time.Second}, "must be positive"},
	}
	for _, c := range cases {
		err := cfg(c.timings).Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v, want valid", c.timings, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want it to say %q", c.timings, err, c.want)
		}
	}
}

// On shutdown the loops stop before the election ends: releasing the Lease
// first would let the next leader start while our writes are in flight.
func TestLeaseIsReleasedOnlyAfterTheLoopsStopped(t *testing.T) {
	stopped := make(chan struct{})
	s := &succession{stop: func() { close(stopped) }, done: make(chan error, 1)}
	ctx, shutDown := context.WithCancel(context.Background())
	running, finish := make(chan struct{}), make(chan struct{})
	go s.lead(ctx, context.Background(), func(ctx context.Context) error {
		close(running)
		<-ctx.Done()
		<-finish // a last write still in flight
		return nil
	})
	<-running
	shutDown()
	s.shutDown()
	select {
	case <-stopped:
		t.Fatal("the election ended while the loops still ran")
	default:
	}
	close(finish)
	<-stopped
	if err := <-s.done; err != nil {
		t.Errorf("body error %v", err)
	}
}

// A shutdown before the Lease was won ends the election at once, and a
// late OnStartedLeading runs nothing.
func TestShutdownBeforeLeadingEndsTheElectionAtOnce(t *testing.T) {
	stopped := make(chan struct{})
	s := &succession{stop: func() { close(stopped) }, done: make(chan error, 1)}
	s.shutDown()
	<-stopped
	s.lead(context.Background(), context.Background(), func(context.Context) error {
		t.Error("the loops ran after shutdown")
		return nil
	})
	if s.started() {
		t.Error("marked leading after shutdown")
	}
}
