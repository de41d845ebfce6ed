package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volplane/volplane/internal/invariants"
)

// Session is one scenario's run: the lab, the scenario's namespace, and
// what the scenario did that its cleanup and the invariant checker must
// know (the claims it deleted, the Retain volumes that must stay).
type Session struct {
	Lab       *Lab
	Namespace string

	ctx    context.Context
	cancel context.CancelFunc
	// claim is the claim the current step is about, for explain.
	claim string
	// deleted are the claims deleted so far, with their volumes.
	deleted []invariants.DeletedClaim
	// retained are Retain volumes that must still be on the backend;
	// cleanup removes orphans, backend volumes the scenario made outlive
	// their claims on purpose (cleanup deletes them from the backend).
	retained map[invariants.Volume]bool
	orphans  map[invariants.Volume]bool
	// classes are the StorageClasses the scenario made (cluster-scoped:
	// the namespace's deletion does not take them).
	classes []string
}

// StepError is a step's failure.
type StepError struct {
	Step  string
	Claim string // the claim the step was about, if any
	Err   error
}

func (e *StepError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// WaitError is a wait that timed out: on what object (Kind and name, to
// find its events), for what, and the last thing seen.
type WaitError struct {
	Kind, Namespace, Name string
	For, Last             string
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("timed out waiting for %s: %s", e.For, e.Last)
}

// Object is the object waited on, as "kind namespace/name".
func (e *WaitError) Object() string {
	if e.Namespace == "" {
		return e.Kind + " " + e.Name
	}
	return e.Kind + " " + e.Namespace + "/" + e.Name
}

// Step runs one named step now: its error comes back as a *StepError naming
// it.
func (s *Session) Step(name string, fn func(ctx context.Context) error) error {
	if err := s.ctx.Err(); err != nil {
		return &StepError{Step: name, Claim: s.claim, Err: fmt.Errorf("not started: the scenario's time is up (%w)", err)}
	}
	if err := fn(s.ctx); err != nil {
		return &StepError{Step: name, Claim: s.claim, Err: err}
	}
	return nil
}

// Step is one named step of a scenario.
type Step struct {
	Name string
	Do   func(ctx context.Context) error
}

// Steps runs steps in order and stops at the first failure.
func (s *Session) Steps(steps ...Step) error {
	for _, st := range steps {
		if err := s.Step(st.Name, st.Do); err != nil {
			return err
		}
	}
	return nil
}

// About says which claim the steps that follow are about (explain's
// subject on failure).
func (s *Session) About(claim string) { s.claim = claim }

// pollEvery is how often a wait reads its object again: the API server is
// in process, reads are cheap, and scenario times are what a user compares.
const pollEvery = 50 * time.Millisecond

// waitFor reads until check says "" (the object is as wanted), or the
// context ends; check's error (not a "not yet") ends the wait at once.
func waitFor(ctx context.Context, kind, namespace, name, what string, check func(context.Context) (string, error)) error {
	last := "not read yet"
	err := wait.PollUntilContextCancel(ctx, pollEvery, true, func(ctx context.Context) (bool, error) {
		msg, err := check(ctx)
		if err != nil {
			return false, err
		}
		if msg != "" {
			last = msg
		}
		return msg == "", nil
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return &WaitError{Kind: kind, Namespace: namespace, Name: name, For: what, Last: last}
	}
	return err
}

// retain records a Retain volume that must stay on the backend.
func (s *Session) retain(v invariants.Volume) {
	s.retained[v] = true
	s.orphans[v] = true
}

// forget records that the scenario removed a retained volume itself.
func (s *Session) forget(v invariants.Volume) {
	delete(s.retained, v)
	delete(s.orphans, v)
}

// expect is what the invariant checker must know of this scenario.
func (s *Session) expect(left invariants.Leftovers) invariants.Expect {
	e := invariants.Expect{Left: left, Deleted: s.deleted}
	for v := range s.retained {
		e.Retained = append(e.Retained, v)
	}
	return e
}

// claimPolicy is the reclaim policy a deleted claim's PV had.
func claimPolicy(pv *corev1.PersistentVolume) corev1.PersistentVolumeReclaimPolicy {
	if pv == nil {
		return ""
	}
	return pv.Spec.PersistentVolumeReclaimPolicy
}
