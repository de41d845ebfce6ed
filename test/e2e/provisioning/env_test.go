package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/stacktest"
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
	// brokenBefore are the PVs already without their backend volume when
	// the test began: the test that broke them reported them.
	brokenBefore map[types.UID]bool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cp := stacktest.ControlPlane(t)
	e := &env{t: t, ctx: context.Background(), client: cp.Client, ns: stacktest.Namespace(t)}
	e.earlier = map[string]bool{}
	before := e.snapshot()
	for _, v := range before.backend {
		e.earlier[v.id] = true
	}
	e.brokenBefore = brokenPVs(before)
	t.Cleanup(func() {
		e.checkInvariants()
		e.removeEverything()
	})
	return e
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
