package badinput

import (
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// edgeCase is one bad input and what a user sees of it.
type edgeCase struct {
	name string
	make maker
	// rejected is the end of the API server's error ("" if it accepts the
	// input): the field and what its validation (or admission) said.
	rejected string
	// want says what is still missing of the outcome a user sees ("" once
	// it is all there); nil for a rejected input.
	want func(e *env, name string) string
}

// run makes every case's input at once, checks the API server's answers,
// then waits for each outcome, and ends with stillServes.
func (e *env) run(cases []edgeCase) {
	e.t.Helper()
	for _, c := range cases {
		err := c.make(e, c.name)
		switch {
		case c.rejected == "" && err != nil:
			e.t.Errorf("%s: rejected: %v", c.name, err)
		case c.rejected != "" && err == nil:
			e.t.Errorf("%s: accepted; want the rejection %q", c.name, c.rejected)
		case c.rejected != "" && !strings.HasSuffix(err.Error(), c.rejected):
			e.t.Errorf("%s: rejected with\n  %v\nwant it to end with\n  %s", c.name, err, c.rejected)
		}
	}
	for _, c := range cases {
		if c.want != nil {
			e.eventually(c.name, func() string { return c.want(e, c.name) })
		}
	}
	e.stillServes(cases)
}

// writesAllowed bounds the loops' writes to one object of a case over
// the elapsed time of a test: a failure is retried with backoff, never
// woken by the loop's own writes. Measured: a claim is written once when
// handed to the provisioner, five times in all when provisioned and bound,
// a few more when expanded, and three times per attempt of a CreateVolume
// refused for good (the in-progress finalizer put on, the pin moved to the
// next node, the finalizer taken off); the provisioner's backoff starts at
// 0.5 s and doubles. A hot loop writes hundreds of times a second.
func writesAllowed(elapsed time.Duration) int {
	attempts := 1 + int(math.Log2(elapsed.Seconds()/0.5+1))
	return 10 + 3*attempts
}

// writesTo are the loops' writes to the case's claim (a pod's or a
// class's name too, when it names a claim) and to its PV.
func (e *env) writesTo(name string) []string {
	claim := "namespaces/" + e.ns + "/persistentvolumeclaims/" + name
	return append(writes.About(claim), writes.About("persistentvolumes/"+e.pvName(name))...)
}

// stillServes asserts that nothing ended on its own, that no object of the
// cases was written more than writesAllowed, and that a normal
// claim made after all the bad input is still provisioned and bound.
func (e *env) stillServes(cases []edgeCase) {
	e.t.Helper()
	if err := stack.EndedEarly(); err != nil {
		e.t.Fatalf("after the bad input: %v", err)
	}
	allowed := writesAllowed(time.Since(e.began))
	for _, c := range cases {
		if w := e.writesTo(c.name); len(w) > allowed {
			e.t.Errorf("%s: %d writes in %s, more than %d: %v", c.name, len(w), time.Since(e.began), allowed, w)
		}
	}
	e.runs++
	normal := fmt.Sprintf("after-bad-input-%d", e.runs)
	if err := e.createClaim(e.claim(normal)); err != nil {
		e.t.Fatal(err)
	}
	e.eventually("a normal claim after the bad input", claimIs(e, normal, corev1.ClaimBound, provisioned))
}

// provisioned is the event of a claim the provisioner served.
const provisioned = "Normal ProvisioningSucceeded: Successfully provisioned volume pvc-"

// claimIs says what is missing unless the claim is in phase and has an
// event starting with event ("" for none wanted).
func claimIs(e *env, name string, phase corev1.PersistentVolumeClaimPhase, event string) func() string {
	return func() string {
		c := e.getClaim(name)
		if c.Status.Phase != phase {
			return fmt.Sprintf("claim %s, want %s; events %q", c.Status.Phase, phase, e.events(e.ns, name))
		}
		if event == "" {
			return ""
		}
		return e.hasEvent(e.ns, name, event)
	}
}

// pending and bound are the usual outcomes of a case's claim.
func pending(event string) func(e *env, name string) string {
	return func(e *env, name string) string { return claimIs(e, name, corev1.ClaimPending, event)() }
}

func bound(event string) func(e *env, name string) string {
	return func(e *env, name string) string { return claimIs(e, name, corev1.ClaimBound, event)() }
}

// volumeIs says what is missing unless the case's PV is in phase and
// (event != "") has an event starting with event.
func volumeIs(phase corev1.PersistentVolumePhase, event string) func(e *env, name string) string {
	return func(e *env, name string) string {
		pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, e.pvName(name), getOptions)
		if err != nil {
			return err.Error()
		}
		if pv.Status.Phase != phase {
			return fmt.Sprintf("PV %s, want %s; events %q", pv.Status.Phase, phase, e.events("", pv.Name))
		}
		if event == "" {
			return ""
		}
		return e.hasEvent("", pv.Name, event)
	}
}

// all is every outcome of checks.
func all(checks ...func(e *env, name string) string) func(e *env, name string) string {
	return func(e *env, name string) string {
		for _, c := range checks {
			if wrong := c(e, name); wrong != "" {
				return wrong
			}
		}
		return ""
	}
}
