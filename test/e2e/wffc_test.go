package e2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/binding"
)

// wffcClass makes the test's class delay binding until a pod is scheduled.
func wffcClass(e *env) {
	e.createClass(e.class, "kubernetes.io/no-provisioner", storagev1.VolumeBindingWaitForFirstConsumer, false)
}

// A claim of a WaitForFirstConsumer class is not bound by the binder, even
// with a matching PV: the scheduler picks the PV with the pod's node.
func TestDelayedClaimWithoutPodWaitsForFirstConsumer(t *testing.T) {
	e := newEnv(t)
	wffcClass(e)
	pv := e.availablePV(e.pv("local", "1Gi"))
	e.createClaim(e.claim("data", "1Gi"))
	e.waitClaimEvent("data", v1.EventTypeNormal, binding.EventWaitForFirstConsumer, binding.MsgWaitForFirstConsumer)
	e.stays("claim and PV stay apart", 3*time.Second, func() string {
		if msg := claimStaysPending(e, "data")(); msg != "" {
			return msg
		}
		return pvStaysUnclaimed(e, pv.Name)()
	})
	if evs := e.binderEvents("PersistentVolumeClaim", e.ns, "data", binding.EventWaitForFirstConsumer); len(evs) != 1 || evs[0].Count != 1 {
		t.Errorf("WaitForFirstConsumer recorded %v, want once across resyncs", summarize(evs))
	}
}

// With a pod that cannot be scheduled, the claim's event names the pod the
// claim is waiting for.
func TestDelayedClaimWithUnscheduledPodWaitsForPodScheduled(t *testing.T) {
	e := newEnv(t)
	wffcClass(e)
	pv := e.availablePV(e.pv("local", "1Gi"))
	e.createClaim(e.claim("data", "1Gi"))
	e.createPod("app", "data", podUnschedulable())
	e.waitClaimEvent("data", v1.EventTypeNormal, binding.EventWaitForPodScheduled, "waiting for pod app to be scheduled")
	e.stays("claim and PV stay apart", 3*time.Second, func() string {
		if msg := claimStaysPending(e, "data")(); msg != "" {
			return msg
		}
		return pvStaysUnclaimed(e, pv.Name)()
	})
}

// With a schedulable pod, the scheduler chooses the PV and writes its
// claimRef; the binder completes that bind and the pod lands on a node.
func TestDelayedClaimBindsVolumeTheSchedulerChose(t *testing.T) {
	e := newEnv(t)
	wffcClass(e)
	pv := e.availablePV(e.pv("local", "1Gi"))
	e.availablePV(e.pv("too-small", "512Mi"))
	e.createClaim(e.claim("data", "1Gi"))
	e.createPod("app", "data")
	e.waitBound("data", pv.Name)

	got := e.getPV(pv.Name)
	if got.Annotations[annBoundByCtrl] != "yes" {
		t.Errorf("PV annotations %v, want bound-by-controller (the scheduler bound it)", got.Annotations)
	}
	if c := e.getClaim("data"); c.Annotations[annBindCompleted] != "yes" {
		t.Errorf("claim annotations %v, want bind-completed", c.Annotations)
	}
	e.eventually("pod scheduled", func() string {
		pod := e.waitPod(e.ns, "app")
		if pod.Spec.NodeName == "" {
			return "no node yet"
		}
		return ""
	})
	e.noEvents("PersistentVolumeClaim", e.ns, "data", binding.EventFailedBinding, binding.EventVolumeMismatch)
}
