package conformance

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// rawBlock: a volumeMode Block claim is provisioned and bound, and a pod
// using it as a device runs. CSI does not report block support: the user
// says it (Lab.Block).
func rawBlock() Scenario {
	return Scenario{Name: "raw-block", Applies: func(l *Lab) (bool, string) {
		if !l.Block {
			return false, "the driver is not said to take raw block volumes (Lab.Block)"
		}
		return true, ""
	}, Run: func(s *Session) error {
		var pv *corev1.PersistentVolume
		return s.Steps(
			Step{"create a Block claim of the Immediate class", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("data", s.Lab.ImmediateClass, blockMode))
			}},
			Step{"the claim binds", func(ctx context.Context) (err error) {
				_, pv, err = s.bound(ctx, "data")
				return err
			}},
			Step{"a pod using it as a device runs", func(ctx context.Context) error {
				_, err := s.startPod(ctx, s.newPod("app", s.firstNode(pv), "data", true))
				return err
			}},
			Step{"the pod is deleted", func(ctx context.Context) error { return s.deletePod(ctx, "app") }},
			Step{"delete the claim: its PV and backend volume go", func(ctx context.Context) error { return s.reclaimed(ctx, "data") }},
		)
	}}
}
