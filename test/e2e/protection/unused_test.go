package protection

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/features"
	"github.com/volplane/volplane/internal/stacktest"
)

// pvc-protection appends its finalizer after the claim's other finalizers,
// as kube-controller-manager does (it used to put it first).
func TestProtectionFinalizerGoesAfterTheClaimsOtherFinalizers(t *testing.T) {
	e := newEnv(t)
	e.createClaim("data", classNone)
	others := []string{"test.volplane.io/first", "test.volplane.io/second"}
	e.noError(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := e.findClaim("data")
		c.Finalizers = others
		_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Update(e.ctx, c, metav1.UpdateOptions{})
		return err
	}), "replace the claim's finalizers")
	t.Cleanup(func() { e.dropFinalizers("data") })
	want := append(slices.Clone(others), pvcProtection)
	e.eventually("finalizer appended", func() string {
		if got := e.findClaim("data").Finalizers; !slices.Equal(got, want) {
			return fmt.Sprintf("finalizers %v, want %v", got, want)
		}
		return ""
	})
}

// dropFinalizers lets the test's claim go.
func (e *env) dropFinalizers(name string) {
	_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := e.findClaim(name)
		if c == nil {
			return nil
		}
		c.Finalizers = nil
		_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Update(e.ctx, c, metav1.UpdateOptions{})
		return err
	})
}

// unusedIs says what is wrong unless the claim's Unused condition has the
// status and the reference's reason, and changed after since.
func (e *env) unusedIs(name string, status corev1.ConditionStatus, since time.Time) func() string {
	reason := map[corev1.ConditionStatus]string{corev1.ConditionTrue: "NoPodsUsingPVC", corev1.ConditionFalse: "PodUsingPVC"}[status]
	return func() string {
		c := e.findClaim(name)
		for _, cond := range c.Status.Conditions {
			if cond.Type != corev1.PersistentVolumeClaimUnused {
				continue
			}
			if cond.Status != status || cond.Reason != reason || cond.LastTransitionTime.Time.Before(since.Truncate(time.Second)) {
				return fmt.Sprintf("Unused %s %s at %v, want %s %s after %v", cond.Status, cond.Reason, cond.LastTransitionTime, status, reason, since)
			}
			return ""
		}
		return fmt.Sprintf("no Unused condition: phase %s, conditions %+v", c.Status.Phase, c.Status.Conditions)
	}
}

// With PersistentVolumeClaimUnusedSinceTime on (v1.37's default), a Bound
// claim no pod references is Unused=True; a pod referencing it, scheduled
// or not, makes it Unused=False; the pod finishing makes it Unused=True
// again, each time with a new lastTransitionTime. A Pending claim gets no
// condition.
func TestBoundClaimIsUnusedUntilAPodReferencesIt(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	e.createClaim("pending", classNone)
	e.createClaim("data", classDelete)
	e.waitBound("data")
	e.eventually("Unused=True with no pod", e.unusedIs("data", corev1.ConditionTrue, start))

	used := time.Now()
	e.createPod("app", usingClaim("data"), unscheduled)
	e.eventually("Unused=False once a pod references it", e.unusedIs("data", corev1.ConditionFalse, used))

	done := time.Now()
	e.setPhase("app", corev1.PodSucceeded)
	e.eventually("Unused=True once the pod finished", e.unusedIs("data", corev1.ConditionTrue, done))
	if c := e.findClaim("pending"); c.Status.Phase != corev1.ClaimPending || len(c.Status.Conditions) != 0 {
		t.Errorf("pending claim: phase %s conditions %+v, want no condition", c.Status.Phase, c.Status.Conditions)
	}
}

// A pod of another namespace naming a claim of the same name, or a pod
// whose ephemeral volume's claim name matches a claim it does not own,
// does not make the claim used.
func TestPodsThatDoNotOwnOrShareTheNamespaceDoNotMakeAClaimUsed(t *testing.T) {
	e := newEnv(t)
	elsewhere := e.other()
	start := time.Now()
	e.createClaim("app-scratch", classDelete)
	e.waitBound("app-scratch")
	elsewhere.createPod("intruder", usingClaim("app-scratch"), unscheduled)
	e.createPod("app", withEphemeral("scratch", classNone), unscheduled)
	e.eventually("Unused=True", e.unusedIs("app-scratch", corev1.ConditionTrue, start))
	e.holds("still Unused=True", keepFor, e.unusedIs("app-scratch", corev1.ConditionTrue, start))
}

// With the gate off, no claim gets the condition.
func TestUnusedConditionIsNotWrittenWithTheGateOff(t *testing.T) {
	e := newEnv(t)
	withoutLoops(t)
	gates := features.New()
	e.noError(gates.Set(string(features.PersistentVolumeClaimUnusedSinceTime)+"=false"), "gate")
	off := stopAtCleanup(t, manager.Config{REST: bed.rest, Controllers: everyLoop, CSIEndpoints: bed.endpoints,
		Workers: 4, ResyncPeriod: 2 * time.Second, Features: gates})
	e.createClaim("data", classDelete)
	e.waitBound("data")
	e.createPod("app", usingClaim("data"))
	e.holds("no Unused condition", keepFor, func() string {
		if err := off.EndedEarly(); err != nil {
			return err.Error()
		}
		if c := e.findClaim("data"); len(c.Status.Conditions) != 0 {
			return fmt.Sprintf("conditions %+v", c.Status.Conditions)
		}
		return ""
	})
}

// stopAtCleanup runs a manager of the test's own until the test ends.
func stopAtCleanup(t *testing.T, cfg manager.Config) *loops {
	l := stacktest.StartLoops(cfg)
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Errorf("the test's loops: %v", err)
		}
	})
	return l
}
