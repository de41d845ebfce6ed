package protection

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keepFor is how long a kept claim is watched for a wrong release: many
// times what an unused claim takes to go (tens of milliseconds), and one
// safety-net resync of the loops.
const keepFor = 3 * time.Second

// A claim deleted while a scheduled pod uses it stays Terminating with its
// finalizer; it goes once the pod is deleted.
func TestClaimUsedByAScheduledPodIsKeptUntilThePodIsDeleted(t *testing.T) {
	e := newEnv(t)
	e.createClaim("data", classNone)
	e.createPod("app", usingClaim("data"))

	e.deleteClaim("data")
	e.holds("claim kept while the pod exists", keepFor, e.claimKept("data"))
	e.deletePod("app")
	e.waitClaimGone("data")
}

// A pod that has finished but still exists keeps its claim, whatever its
// phase: it may be restarted, or its logs and volumes read.
func TestFinishedPodThatStillExistsKeepsItsClaim(t *testing.T) {
	for _, phase := range []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed} {
		t.Run(string(phase), func(t *testing.T) {
			e := newEnv(t)
			e.createClaim("data", classNone)
			e.createPod("job", usingClaim("data"))
			e.setPhase("job", phase)

			e.deleteClaim("data")
			e.holds("claim kept by the "+string(phase)+" pod", keepFor, e.claimKept("data"))
			e.deletePod("job")
			e.waitClaimGone("data")
		})
	}
}

// Neither a pod the scheduler has not placed nor a scheduled pod of another
// namespace with a claim of the same name keeps a claim.
func TestUnscheduledPodsAndPodsOfOtherNamespacesDoNotKeepAClaim(t *testing.T) {
	e := newEnv(t)
	elsewhere := e.other()
	e.createClaim("data", classNone)
	elsewhere.createClaim("data", classNone)
	e.createPod("waiting", usingClaim("data"), unscheduled)
	elsewhere.createPod("app", usingClaim("data"))

	e.deleteClaim("data")
	e.waitClaimGone("data")
	if p, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, "waiting", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("the pod was meant to stay unscheduled: %v node %q", err, p.Spec.NodeName)
	}
	if c := elsewhere.findClaim("data"); c == nil || c.DeletionTimestamp != nil {
		t.Errorf("the other namespace's claim was touched: %v", c)
	}
}

// The claim of a generic ephemeral volume is kept while its pod is not
// shut down. A pod that still exists but is shut down (deleted with grace
// period 0, held only by a finalizer) no longer keeps it.
func TestEphemeralClaimIsKeptWhileItsPodIsNotShutDown(t *testing.T) {
	e := newEnv(t)
	e.createPod("app", withEphemeral("scratch", classNone), heldBy("test.volplane.io/hold"))
	e.eventually("ephemeral claim made by the ephemeral-volume loop", func() string {
		if e.findClaim("app-scratch") == nil {
			return "no claim app-scratch"
		}
		return ""
	})

	e.deleteClaim("app-scratch")
	e.holds("ephemeral claim kept by its running pod", keepFor, e.claimKept("app-scratch"))
	e.deletePod("app") // grace period 0: shut down, but held by the finalizer
	p, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, "app", metav1.GetOptions{})
	if err != nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("pod should still exist, shut down: %v", err)
	}
	e.waitClaimGone("app-scratch")
}

// A claim that has an ephemeral volume's name but was not made for the pod
// (the pod does not control it) is not that pod's to keep. Once it is gone,
// the ephemeral-volume loop makes the pod's own claim under that name.
func TestClaimNamedLikeAnEphemeralVolumeButNotOwnedIsNotKept(t *testing.T) {
	e := newEnv(t)
	foreign := e.createClaim("app-scratch", classNone)
	e.createPod("app", withEphemeral("scratch", classNone))

	e.deleteClaim("app-scratch")
	e.eventually("the foreign claim gone", func() string {
		if c := e.findClaim("app-scratch"); c != nil && c.UID == foreign.UID {
			return fmt.Sprintf("still there, finalizers %v", c.Finalizers)
		}
		return ""
	})
}

// A claim and a volume that lack their finalizer while not being deleted
// get it back.
func TestFinalizerIsAddedToAClaimAndAVolumeThatLackIt(t *testing.T) {
	e := newEnv(t)
	e.createClaim("data", classNone)
	pv := e.createStaticPV("bare", "")
	for _, strip := range []func() error{
		func() error {
			c := e.findClaim("data")
			c.Finalizers = nil
			_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Update(e.ctx, c, metav1.UpdateOptions{})
			return err
		},
		func() error {
			v := e.findPV(pv.Name)
			v.Finalizers = nil
			_, err := e.client.CoreV1().PersistentVolumes().Update(e.ctx, v, metav1.UpdateOptions{})
			return err
		},
	} {
		// The binder may write the new PV (its phase) between our read
		// and our update: read again and retry, as any client would.
		e.noError(retry.RetryOnConflict(retry.DefaultRetry, strip), "strip finalizer")
	}
	e.eventually("finalizers back", func() string {
		if c := e.findClaim("data"); !has(c.Finalizers, pvcProtection) {
			return "claim finalizers " + join(c.Finalizers)
		}
		if v := e.findPV(pv.Name); !has(v.Finalizers, pvProtection) {
			return "PV finalizers " + join(v.Finalizers)
		}
		return ""
	})
}

// A pod deleted while the loops were not looking is seen after it;
// pending work survives a restart.
func TestClaimUsedByAPodDeletedWhileTheLoopsWereDownGoesAfterRestart(t *testing.T) {
	e := newEnv(t)
	e.createClaim("used", classNone)
	e.createClaim("unused", classNone)
	e.createPod("app", usingClaim("used"))
	e.deleteClaim("used")
	e.holds("claim kept", time.Second, e.claimKept("used"))

	restart := withoutLoops(t)
	e.deleteClaim("unused")
	e.deletePod("app")
	pv := e.createStaticPV("gone", "")
	e.noError(e.client.CoreV1().PersistentVolumes().Delete(e.ctx, pv.Name, metav1.DeleteOptions{}), "delete PV")
	e.holds("nothing released while the loops are down", time.Second, func() string {
		if e.findClaim("unused") == nil || e.findClaim("used") == nil || e.findPV(pv.Name) == nil {
			return "an object went with no loop running"
		}
		return ""
	})
	restart()
	e.waitClaimGone("used")
	e.waitClaimGone("unused")
	e.waitPVGone(pv.Name)
}
