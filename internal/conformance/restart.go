package conformance

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// needRestart: the kill scenarios need the lab to have started the
// driver's processes.
func needRestart(l *Lab) (bool, string) {
	if l.Restart == nil {
		return false, "the driver was not started by volplane"
	}
	return true, ""
}

// controllerRestart: the driver's controller is killed (SIGKILL) right
// after a claim is made, before it can have answered; once it serves
// again, the claim still binds, and its deletion still reaches the
// backend.
func controllerRestart() Scenario {
	return Scenario{Name: "controller-killed", Applies: needRestart, Run: func(s *Session) error {
		return s.Steps(
			Step{"create a claim of the Immediate class", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("data", s.Lab.ImmediateClass))
			}},
			Step{"kill the driver's controller and start it again", func(ctx context.Context) error {
				return s.Lab.Restart(ctx, "controller")
			}},
			Step{"the claim binds", func(ctx context.Context) error {
				_, _, err := s.bound(ctx, "data")
				return err
			}},
			Step{"delete the claim: its PV and backend volume go", func(ctx context.Context) error { return s.reclaimed(ctx, "data") }},
		)
	}}
}

// nodeRestart: the driver's node service is killed while a pod uses a
// volume on its node; once it serves again, the pod can be deleted (the
// volume unpublished) and a new pod using the volume starts there.
func nodeRestart() Scenario {
	return Scenario{Name: "node-plugin-killed", Applies: needRestart, Run: func(s *Session) error {
		var first *corev1.Pod
		return s.Steps(
			Step{"create a claim of the Immediate class", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("data", s.Lab.ImmediateClass))
			}},
			Step{"the claim binds, and a pod using it runs", func(ctx context.Context) error {
				_, pv, err := s.bound(ctx, "data")
				if err != nil {
					return err
				}
				first, err = s.startPod(ctx, s.newPod("first", s.firstNode(pv), "data", false))
				return err
			}},
			Step{"kill the driver's node service of the pod's node and start it again", func(ctx context.Context) error {
				return s.Lab.Restart(ctx, first.Spec.NodeName)
			}},
			Step{"the pod is deleted", func(ctx context.Context) error { return s.deletePod(ctx, "first") }},
			Step{"a new pod using the volume runs on the node", func(ctx context.Context) error {
				_, err := s.startPod(ctx, s.newPod("second", first.Spec.NodeName, "data", false))
				return err
			}},
		)
	}}
}
