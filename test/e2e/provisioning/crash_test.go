package provisioning

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/stacktest"
)

// Provisioning takes three writes: the claim's in-progress finalizer, the
// PV, the finalizer's removal (CreateVolume sits between the first two). A
// provisioner that dies before any of them leaves a state the next one
// completes: one backend volume and one PV for the claim, the claim Bound
// and its finalizer gone; or, if the claim was deleted meanwhile, nothing.
func TestProvisioningInterruptedByCrashIsCompletedByTheNextProvisioner(t *testing.T) {
	crashes := []struct {
		name    string
		allowed int64
	}{
		{"before the claim finalizer", 0},
		{"before the PV create", 1},
		{"before the finalizer removal", 2},
	}
	for _, crash := range crashes {
		for _, claimDeleted := range []bool{false, true} {
			name := crash.name
			if claimDeleted {
				name += ", claim deleted meanwhile"
			}
			t.Run(name, func(t *testing.T) {
				e, rc := crashBed(t)
				c := e.createClaim(e.claim("data", classImmediate, "100Mi"))
				crashing := &faultyWrites{allowed: crash.allowed, matches: provisioningWrite(e.ns, c.Name)}
				e.crashProvisioner(crashing, rc)
				e.expectPartialProvisioning(crash.allowed, c.Name)

				if claimDeleted {
					e.deleteClaim(c.Name)
				}
				runLoops(t, rc, provisionerOnly...)
				if claimDeleted {
					e.expectNothingLeftOf(c.Name)
					return
				}
				e.expectProvisionedOnce(c.Name)
			})
		}
	}
}

// While every PV create fails, the provisioner retries without making a
// second backend volume; the next provisioner uses the volume that is there.
func TestFailingPVCreateNeverLeaksBackendVolumes(t *testing.T) {
	e, rc := crashBed(t)
	c := e.createClaim(e.claim("data", classImmediate, "100Mi"))
	crashing := &faultyWrites{matches: func(req *http.Request) bool {
		return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/persistentvolumes")
	}}
	l := startLoops(crashing.config(rc), provisionerOnly...)
	e.eventually("a PV create was refused twice", func() string {
		if n := crashing.refused.Load(); n < 2 {
			return fmt.Sprintf("%d refused", n)
		}
		return ""
	})
	e.holds("at most one backend volume, no PV", 2*time.Second, func() string {
		if vols := e.newVolumes(); len(vols) > 1 {
			return fmt.Sprintf("backend volumes %v for one claim", vols)
		}
		if pvs := e.ourPVs(); len(pvs) > 0 {
			return "PV " + pvs[0].Name + " exists"
		}
		return ""
	})
	if err := l.Stop(); err != nil {
		t.Logf("crashing provisioner: %v", err)
	}
	runLoops(t, rc, provisionerOnly...)
	e.expectProvisionedOnce(c.Name)
}

// With the default mark delay a create the driver answers at once writes
// nothing to the claim (the external-provisioner's writes). A crash
// between that create and its PV leaves a backend volume that nothing on
// the claim names: the next provisioner asks for the same name and makes
// the PV of the volume the driver returns; if the claim was deleted
// meanwhile the volume is left behind, as the reference leaves it, and
// doctor reports it as a backend volume no PV refers to.
func TestCrashBetweenAnUnmarkedCreateAndItsPV(t *testing.T) {
	for _, claimDeleted := range []bool{false, true} {
		name := "claim kept"
		if claimDeleted {
			name = "claim deleted meanwhile"
		}
		t.Run(name, func(t *testing.T) {
			e, rc := crashBed(t)
			c := e.createClaim(e.claim("data", classImmediate, "100Mi"))
			crashing := &faultyWrites{matches: provisioningWrite(e.ns, c.Name)}
			e.crash(crashing, startLoopsMarkingLate(crashing.config(rc), provisionerOnly...))
			vol := e.onlyNewVolume()
			if got := e.getClaim(c.Name); slices.Contains(got.Finalizers, claimFinalizer) {
				t.Fatalf("claim finalizers %v: a create answered at once marked the claim", got.Finalizers)
			}
			if pvs := e.ourPVs(); len(pvs) > 0 {
				t.Fatalf("PV %s made though its create was refused", pvs[0].Name)
			}
			if !claimDeleted {
				l := startLoopsMarkingLate(rc, provisionerOnly...)
				t.Cleanup(func() { _ = l.Stop() })
				e.expectProvisionedOnce(c.Name)
				return
			}
			e.deleteClaim(c.Name)
			e.waitClaimGone(c.Name)
			report, err := checkup.Doctor(e.ctx, e.client, checkup.DoctorConfig{Endpoints: endpoints(), Output: "json"}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			found := slices.ContainsFunc(report.Findings, func(f doctor.Finding) bool {
				return f.Kind == doctor.KindOrphanedBackendVolume && f.Object.Name == vol.id
			})
			e.deleteBackendVolume(vol)
			if !found {
				t.Errorf("doctor does not report the volume %s left by the crash: %+v", vol, report.Findings)
			}
		})
	}
}

// crashBed replaces the shared loops by a binder of its own for the test;
// the test runs provisioners as it needs.
func crashBed(t *testing.T) (*env, *rest.Config) {
	withoutSharedLoops(t)
	e := newEnv(t)
	rc := stacktest.ControlPlane(t).RESTConfig
	runLoops(t, rc, binderOnly...)
	return e, rc
}

// crashProvisioner runs a provisioner on the faulty transport until it has
// had a write refused, then stops it: a crash at that write.
func (e *env) crashProvisioner(f *faultyWrites, rc *rest.Config) {
	e.t.Helper()
	e.crash(f, startLoops(f.config(rc), provisionerOnly...))
}

// crash waits until the loops l, which run on f's transport, had a write
// refused, then stops them.
func (e *env) crash(f *faultyWrites, l *loops) {
	e.t.Helper()
	e.eventually("the crashing provisioner reached its refused write", func() string {
		if f.refused.Load() == 0 {
			return fmt.Sprintf("%d writes passed, none refused", f.seen.Load())
		}
		return ""
	})
	if err := l.Stop(); err != nil {
		e.t.Logf("crashing provisioner: %v", err)
	}
}

// expectPartialProvisioning checks what the first `done` writes left. The
// finalizer comes before CreateVolume, so no volume exists without it.
func (e *env) expectPartialProvisioning(done int64, claim string) {
	e.t.Helper()
	c := e.getClaim(claim)
	hasFinalizer := slices.Contains(c.Finalizers, claimFinalizer)
	hasPV := e.findPV(provisionedName(c)) != nil
	vols := e.newVolumes()
	switch {
	case hasFinalizer != (done >= 1):
		e.t.Fatalf("after %d writes: claim finalizers %v", done, c.Finalizers)
	case hasPV != (done >= 2):
		e.t.Fatalf("after %d writes: PV exists = %v", done, hasPV)
	case !hasFinalizer && len(vols) > 0:
		e.t.Fatalf("backend volumes %v made before the claim held %s", vols, claimFinalizer)
	case len(vols) > 1:
		e.t.Fatalf("backend volumes %v for one claim", vols)
	}
}

// expectProvisionedOnce waits for the claim to be Bound to its PV with its
// finalizer gone, and checks the backend holds exactly its one volume.
func (e *env) expectProvisionedOnce(claim string) {
	e.t.Helper()
	c, pv := e.waitBound(claim)
	e.eventually("claim finalizer removed", func() string {
		if c = e.getClaim(claim); slices.Contains(c.Finalizers, claimFinalizer) {
			return fmt.Sprintf("finalizers %v", c.Finalizers)
		}
		return ""
	})
	if vol := e.onlyNewVolume(); pv.Spec.CSI == nil || pv.Spec.CSI.VolumeHandle != vol.id {
		e.t.Errorf("PV source %+v, want the backend volume %s", pv.Spec.CSI, vol)
	}
	if pvs := e.ourPVs(); len(pvs) != 1 {
		e.t.Errorf("%d PVs for one claim", len(pvs))
	}
}

// expectNothingLeftOf waits until the deleted claim, its PV and its backend
// volume are all gone.
func (e *env) expectNothingLeftOf(claim string) {
	e.t.Helper()
	e.waitClaimGone(claim)
	for _, pv := range e.ourPVs() {
		e.waitPVDeleted(pv.Name)
	}
	e.eventually("backend volumes deleted", func() string {
		if vols := e.newVolumes(); len(vols) > 0 {
			return fmt.Sprintf("left: %v", vols)
		}
		return ""
	})
	if pvs := e.ourPVs(); len(pvs) > 0 {
		e.t.Errorf("PV %s left", pvs[0].Name)
	}
}

// faultyWrites is an API transport that refuses the writes a rule matches
// once `allowed` of them went through, as if the process died just before
// sending them. Reads and other writes (events among them) pass.
type faultyWrites struct {
	allowed int64
	matches func(*http.Request) bool
	seen    atomic.Int64
	refused atomic.Int64
}

// config is base with every client it makes sending through f.
func (f *faultyWrites) config(base *rest.Config) *rest.Config {
	rc := rest.CopyConfig(base)
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper { return &faultyTransport{rule: f, next: next} })
	return rc
}

// refuses counts a write against the rule and reports whether to refuse it.
func (f *faultyWrites) refuses(req *http.Request) bool {
	if req.Method == http.MethodGet || !f.matches(req) || f.seen.Add(1) <= f.allowed {
		return false
	}
	f.refused.Add(1)
	return true
}

type faultyTransport struct {
	rule *faultyWrites
	next http.RoundTripper
}

func (t *faultyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.rule.refuses(req) {
		return nil, fmt.Errorf("injected crash: %s %s refused", req.Method, req.URL.Path)
	}
	return t.next.RoundTrip(req)
}

// provisioningWrite matches writes to the claim and to PVs.
func provisioningWrite(ns, claim string) func(*http.Request) bool {
	claimPath := "/namespaces/" + ns + "/persistentvolumeclaims/" + claim
	return func(req *http.Request) bool {
		p := strings.TrimSuffix(req.URL.Path, "/status")
		return strings.HasSuffix(p, claimPath) || strings.HasSuffix(p, "/persistentvolumes") ||
			strings.Contains(p, "/persistentvolumes/")
	}
}
