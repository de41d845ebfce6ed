package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// Strings users and tools depend on, spelled out. On claims:
const (
	annSelectedNode = "volume.kubernetes.io/selected-node"
	claimFinalizer  = "provisioning.volplane.io/in-progress"
	pvcProtection   = "kubernetes.io/pvc-protection"
)

// On PVs:
const (
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	pvFinalizer      = "external-provisioner.volume.kubernetes.io/finalizer"
	pvProtection     = "kubernetes.io/pv-protection"
)

// env is one test's world: a client, a namespace, and the backend volumes
// that existed before the test (so counts are the test's own).
type env struct {
	t       *testing.T
	ctx     context.Context
	client  kubernetes.Interface
	ns      string
	earlier map[string]bool
	// left is what the cluster already broke when the test began (the
	// backend volumes there, the PVs already without their volume): the
	// test that broke it reported it.
	left invariants.Leftovers
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cp := stacktest.ControlPlane(t)
	e := &env{t: t, ctx: context.Background(), client: cp.Client, ns: stacktest.Namespace(t)}
	e.earlier = map[string]bool{}
	for _, v := range e.backendVolumes() {
		e.earlier[v.id] = true
	}
	e.left = invariants.Before(support.ReadState(t, e.client, endpoints()...))
	t.Cleanup(func() {
		e.checkInvariants()
		e.removeEverything()
	})
	return e
}

// settleTimeout is how long the checker lets work in flight (a deletion
// between its steps) finish before it reports what is still wrong.
const settleTimeout = 5 * time.Second

// checkInvariants fails the test if the cluster and the backend hold a
// state the loops must never leave behind at rest (invariants.Bindings and
// invariants.Backends, but for what the test began with):
//   - a PV that is the volume of two Bound claims;
//   - a Bound claim whose PV is missing or does not point back at it;
//   - a backend volume made during the test with no PV for it (leaked), or
//     on a node its PV is not accessible from (a second copy);
//   - any PV of the driver, whatever its claim or reclaim policy, whose
//     backend volume is gone while the PV is not being deleted (data
//     deleted under a PV that still promises it).
func (e *env) checkInvariants() {
	e.t.Helper()
	support.Holds(e.t, settleTimeout, func() []string {
		s := support.ReadState(e.t, e.client, endpoints()...)
		return append(invariants.Bindings(s.Claims, s.PVs), invariants.Backends(s, e.left)...)
	})
}

// Waits. Short polls, never sleeps on the happy path.

const (
	pollEvery   = stacktest.PollEvery
	waitTimeout = stacktest.WaitTimeout
)

// eventually polls cond until it returns "" and fails the test with the
// last description of what was still wrong otherwise.
func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, func() error {
		if err := bed.shared.EndedEarly(); err != nil {
			return fmt.Errorf("the shared binder and provisioner %v", err)
		}
		return nil
	})
}

// holds asserts cond keeps returning "" for d: for states that must not change.
func (e *env) holds(what string, d time.Duration, cond func() string) {
	e.t.Helper()
	stacktest.Holds(e.t, what, d, cond)
}

// waitBound waits until the claim is Bound to the PV provisioned for it and
// that PV is Bound to the claim; it returns both.
func (e *env) waitBound(name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	e.t.Helper()
	var (
		c  *corev1.PersistentVolumeClaim
		pv *corev1.PersistentVolume
	)
	e.eventually("claim "+name+" bound to its provisioned PV", func() string {
		c = e.getClaim(name)
		pv = e.findPV(provisionedName(c))
		switch {
		case pv == nil:
			return fmt.Sprintf("no PV %s; claim phase %s, events %s", provisionedName(c), c.Status.Phase,
				describe(e.events("PersistentVolumeClaim", e.ns, name)))
		case c.Status.Phase != corev1.ClaimBound || c.Spec.VolumeName != pv.Name:
			return fmt.Sprintf("claim phase %s volumeName %q", c.Status.Phase, c.Spec.VolumeName)
		case pv.Status.Phase != corev1.VolumeBound:
			return "PV phase " + string(pv.Status.Phase)
		}
		return ""
	})
	return c, pv
}

// pendingWithoutVolume says what is wrong unless the claim is Pending with
// no PV and no backend volume made for it.
func (e *env) pendingWithoutVolume(name string) func() string {
	return func() string {
		c := e.getClaim(name)
		switch {
		case c.Status.Phase != corev1.ClaimPending || c.Spec.VolumeName != "":
			return fmt.Sprintf("claim phase %s volumeName %q, want Pending", c.Status.Phase, c.Spec.VolumeName)
		case e.findPV(provisionedName(c)) != nil:
			return "PV " + provisionedName(c) + " exists"
		}
		if vols := e.newVolumes(); len(vols) > 0 {
			return fmt.Sprintf("backend volumes %v exist", vols)
		}
		return ""
	}
}
