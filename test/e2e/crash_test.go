package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/stacktest"
)

// A binder that dies after any of the four bind writes leaves a state the
// next binder completes: same PV, no second PV bound, nothing undone.
func TestBindInterruptedAfterEachWriteIsCompletedByTheNextBinder(t *testing.T) {
	for writes := 1; writes <= 3; writes++ {
		t.Run(fmt.Sprintf("after write %d", writes), func(t *testing.T) {
			withoutSharedBinder(t)
			e := newEnv(t)
			chosen := e.createPV(e.pv("chosen", "1Gi"))
			e.createPV(e.pv("other", "2Gi"))
			e.createClaim(e.claim("data", "1Gi"))

			crashing := &writeBudget{allowed: int64(writes), paths: []string{
				"/persistentvolumes/" + chosen.Name,
				"/namespaces/" + e.ns + "/persistentvolumeclaims/data",
			}}
			first := startBinder(crashing.config(stacktest.ControlPlane(t).RESTConfig), 4)
			e.eventually("the crashing binder used its write budget", func() string {
				if n := crashing.refused.Load(); n == 0 {
					return fmt.Sprintf("%d writes done, none refused yet", crashing.done.Load())
				}
				return ""
			})
			if err := first.Stop(); err != nil {
				t.Fatalf("crashing binder: %v", err)
			}
			assertPartialBind(e, writes, chosen.Name)

			second := startBinder(stacktest.ControlPlane(t).RESTConfig, 4)
			defer second.Stop()
			e.waitBound("data", chosen.Name)
			other := e.waitPVPhase(e.ns+"-other", v1.VolumeAvailable)
			if other.Spec.ClaimRef != nil {
				t.Errorf("the other PV was claimed too: %v", other.Spec.ClaimRef)
			}
		})
	}
}

// assertPartialBind checks the crash left exactly the first n writes.
func assertPartialBind(e *env, n int, pvName string) {
	e.t.Helper()
	pv, claim := e.getPV(pvName), e.getClaim("data")
	hasRef := pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID == claim.UID
	checks := []struct {
		done bool
		what string
	}{
		{hasRef, "PV claimRef set"},
		{pv.Status.Phase == v1.VolumeBound, "PV phase Bound"},
		{claim.Spec.VolumeName == pvName, "claim volumeName set"},
		{claim.Status.Phase == v1.ClaimBound, "claim phase Bound"},
	}
	for i, c := range checks {
		if want := i < n; c.done != want {
			e.t.Fatalf("after %d writes: %s = %v, want %v", n, c.what, c.done, want)
		}
	}
}

// writeBudget fails every write to the watched objects after the first
// `allowed` ones, as if the binder died there: nothing after reaches the
// API server. Reads and writes to other objects pass.
type writeBudget struct {
	allowed int64
	paths   []string
	done    atomic.Int64
	refused atomic.Int64
}

func (w *writeBudget) config(base *rest.Config) *rest.Config {
	rc := rest.CopyConfig(base)
	rc.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet || !w.watched(req.URL.Path) {
				return next.RoundTrip(req)
			}
			if w.done.Add(1) > w.allowed {
				w.refused.Add(1)
				return nil, errors.New("injected crash: write refused")
			}
			return next.RoundTrip(req)
		})
	}
	return rc
}

func (w *writeBudget) watched(path string) bool {
	path = strings.TrimSuffix(path, "/status")
	for _, p := range w.paths {
		if strings.HasSuffix(path, p) {
			return true
		}
	}
	return false
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
