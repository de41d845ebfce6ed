package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/invariants"
)

// Options say how to run.
type Options struct {
	// Timeout bounds each scenario, and apart from it its cleanup
	// (default DefaultTimeout).
	Timeout time.Duration
	// Scenarios replaces the registry (Scenarios()), for a run of a few,
	// or a test's own.
	Scenarios []Scenario
	// Done, if set, is told each result as it is known (progress).
	Done func(Result)
}

// DefaultTimeout is a scenario's time when Options do not say.
const DefaultTimeout = 60 * time.Second

// Run runs every scenario that applies to lab, each in a fresh namespace
// and within the timeout, cleans up after each and checks the invariants,
// and reports every scenario of the registry: passed, failed or skipped.
func Run(ctx context.Context, lab *Lab, opts Options) Report {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	all := opts.Scenarios
	if all == nil {
		all = Scenarios()
	}
	report := Report{Driver: lab.Driver}
	before, err := readState(ctx, lab)
	left := invariants.Before(before)
	for _, sc := range all {
		var res Result
		switch ok, why := applies(sc, lab); {
		case !ok:
			res = Result{Name: sc.Name, Status: Skip, Reason: why}
		case err != nil:
			res = failed(sc.Name, 0, &Failure{Step: "read the cluster and the driver's volumes before the run", Error: err.Error()})
		default:
			res, left = runOne(ctx, lab, sc, max(opts.Timeout, sc.MinTimeout), left)
		}
		report.Results = append(report.Results, res)
		if opts.Done != nil {
			opts.Done(res)
		}
	}
	return report
}

func applies(sc Scenario, lab *Lab) (bool, string) {
	if sc.Applies == nil {
		return true, ""
	}
	return sc.Applies(lab)
}

// runOne runs one scenario and its cleanup and checks the invariants; it
// returns the result and the leftovers the next scenario starts with.
func runOne(ctx context.Context, lab *Lab, sc Scenario, timeout time.Duration, left invariants.Leftovers) (Result, invariants.Leftovers) {
	start := time.Now()
	s, err := newSession(ctx, lab, sc.Name, timeout)
	if err != nil {
		return failed(sc.Name, time.Since(start), &Failure{Step: "create the scenario's namespace", Error: err.Error()}), left
	}
	var failure *Failure
	if err := sc.Run(s); err != nil {
		failure = s.describe(ctx, err, timeout)
	}
	s.cancel()

	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.cleanup(cctx); err != nil && failure == nil {
		failure = &Failure{Step: "clean up", Error: err.Error()}
	}
	state, err := readState(cctx, lab)
	switch {
	case err != nil && failure == nil:
		failure = &Failure{Step: "check the invariants", Error: err.Error()}
	case err == nil:
		if broken := invariants.Check(state, s.expect(left)); len(broken) > 0 {
			if failure == nil {
				failure = &Failure{Step: "check the invariants", Error: broken[0]}
			}
			failure.Invariants = broken
		}
		// What this scenario broke is reported here, not again.
		left = invariants.Before(state)
	}
	// The time is the scenario's with its cleanup and check: what the
	// driver takes to go through it and back.
	took := time.Since(start)
	if failure != nil {
		return failed(sc.Name, took, failure), left
	}
	return Result{Name: sc.Name, Status: Pass, Duration: took, Seconds: took.Seconds()}, left
}

func failed(name string, took time.Duration, f *Failure) Result {
	reason := f.Step + ": " + f.Error
	return Result{Name: name, Status: Fail, Reason: reason, Duration: took, Seconds: took.Seconds(), Failure: f}
}

// readState reads what the invariant checker looks at, the snapshot
// objects too when the lab has the snapshot API.
// A driver that does not list its volumes is checked on the cluster's
// side alone.
func readState(ctx context.Context, lab *Lab) (invariants.State, error) {
	var endpoints []string
	if lab.Controller.List {
		endpoints = lab.Endpoints
	}
	if lab.Snapshots != nil && (lab.SnapshotClass != "" || lab.GroupSnapshotClass != "") {
		return checkup.ReadInvariantsWith(ctx, lab.Client, lab.Snapshots, endpoints)
	}
	return checkup.ReadInvariants(ctx, lab.Client, endpoints)
}

// newSession makes the scenario's namespace and its context.
func newSession(ctx context.Context, lab *Lab, name string, timeout time.Duration) (*Session, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "conformance-", Labels: map[string]string{scenarioLabel: name}}}
	ns, err := lab.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	return &Session{Lab: lab, Namespace: ns.Name, ctx: sctx, cancel: cancel,
		retained: map[invariants.Volume]bool{}, orphans: map[invariants.Volume]bool{}}, nil
}

// scenarioLabel labels a scenario's namespace with the scenario's name.
const scenarioLabel = "conformance.volplane.io/scenario"

// describe is the failure of err, with what the cluster says about it.
func (s *Session) describe(ctx context.Context, err error, timeout time.Duration) *Failure {
	f := &Failure{Error: err.Error()}
	var step *StepError
	if errors.As(err, &step) {
		f.Step, f.Error = step.Step, step.Err.Error()
	}
	// The scenario's context may be spent: reading what happened gets
	// a little time of its own.
	rctx, cancel := context.WithTimeout(ctx, min(timeout, 10*time.Second))
	defer cancel()
	var w *WaitError
	if errors.As(err, &w) {
		f.Object = w.Object()
	}
	if ev := s.warning(rctx, w); ev != nil {
		f.Event = fmt.Sprintf("%s %s/%s: %s: %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.Reason, ev.Message)
		f.Event = trimSlash(f.Event)
		f.CSICall = csiCall(ev.Reason)
	}
	if step != nil && step.Claim != "" {
		f.Explain = s.explain(rctx, step.Claim)
	}
	return f
}
