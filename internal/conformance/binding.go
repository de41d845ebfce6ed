package conformance

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/volplane/volplane/internal/binding"
)

// waitForFirstConsumer: a claim of the WaitForFirstConsumer class stays
// Pending (the binder says it waits for its first consumer) until a pod
// uses it; then it is provisioned and bound where the pod runs: on the
// pod's node's topology when the driver reports topology.
func waitForFirstConsumer() Scenario {
	return Scenario{Name: "wait-for-first-consumer", Applies: needWaitClass, Run: func(s *Session) error {
		var pod *corev1.Pod
		return s.Steps(
			Step{"create a claim of the WaitForFirstConsumer class", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("data", s.Lab.WaitClass))
			}},
			Step{"the claim waits for its first consumer", func(ctx context.Context) error {
				return s.waitsForConsumer(ctx, "data")
			}},
			Step{"a pod using it runs", func(ctx context.Context) (err error) {
				pod, err = s.startPod(ctx, s.newPod("app", "", "data", false))
				return err
			}},
			Step{"the claim is bound on the pod's node", func(ctx context.Context) error {
				_, pv, err := s.bound(ctx, "data")
				if err != nil {
					return err
				}
				return s.reachableFrom(ctx, pv, pod.Spec.NodeName)
			}},
		)
	}}
}

func needWaitClass(l *Lab) (bool, string) {
	if l.WaitClass == "" {
		return false, "no WaitForFirstConsumer StorageClass of the driver"
	}
	return true, ""
}

// waitsForConsumer waits for the binder's WaitForFirstConsumer event on
// the claim and checks the claim is still Pending: what the binder says
// instead of binding, so no wait for "long enough" is needed.
func (s *Session) waitsForConsumer(ctx context.Context, claim string) error {
	sel := fields.Set{"involvedObject.kind": "PersistentVolumeClaim", "involvedObject.name": claim, "reason": binding.EventWaitForFirstConsumer}.AsSelector().String()
	err := waitFor(ctx, "PersistentVolumeClaim", s.Namespace, claim, "the binder's "+binding.EventWaitForFirstConsumer+" event", func(ctx context.Context) (string, error) {
		evs, err := s.Lab.Client.CoreV1().Events(s.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return err.Error(), nil
		}
		if len(evs.Items) == 0 {
			return "no such event yet", nil
		}
		return "", nil
	})
	if err != nil {
		return err
	}
	c, err := s.getClaim(ctx, claim)
	if err != nil {
		return err
	}
	if c.Status.Phase != corev1.ClaimPending || c.Spec.VolumeName != "" {
		return fmt.Errorf("claim %s is %s (volume %q) with no pod using it, want Pending", claim, c.Status.Phase, c.Spec.VolumeName)
	}
	return nil
}

// reachableFrom checks that pv may be used from node: when the driver
// reports topology, the PV carries node affinity and the node matches it.
func (s *Session) reachableFrom(ctx context.Context, pv *corev1.PersistentVolume, node string) error {
	if !s.Lab.Controller.Accessibility {
		return nil
	}
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return fmt.Errorf("the driver reports topology (VOLUME_ACCESSIBILITY_CONSTRAINTS), yet PV %s has no node affinity", pv.Name)
	}
	n, err := s.Lab.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ok, err := corev1helpers.MatchNodeSelectorTerms(n, pv.Spec.NodeAffinity.Required)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("PV %s's node affinity does not admit node %s, where its pod runs", pv.Name, node)
	}
	return nil
}
