package conformance

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// offlineExpansion: a claim no pod uses is grown; the controller expands
// the volume (the PV's capacity), and when the driver's node service
// expands too, the first pod that mounts it finishes the expansion.
func offlineExpansion() Scenario {
	return Scenario{Name: "expansion-offline", Applies: func(l *Lab) (bool, string) {
		if !l.Controller.ControllerExpand {
			return false, "the driver's controller cannot expand volumes (no EXPAND_VOLUME)"
		}
		return true, ""
	}, Run: func(s *Session) error {
		var pv *corev1.PersistentVolume
		return s.Steps(
			Step{"create a claim of the Immediate class", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("data", s.Lab.ImmediateClass))
			}},
			Step{"the claim binds", func(ctx context.Context) (err error) {
				_, pv, err = s.bound(ctx, "data")
				return err
			}},
			Step{"raise the claim's request, no pod using it", func(ctx context.Context) error { return s.grow(ctx, "data") }},
			Step{"the PV grows", func(ctx context.Context) error { return s.pvGrown(ctx, pv.Name) }},
			Step{"a pod using it runs (the node finishes the expansion)", func(ctx context.Context) error {
				if !s.Lab.Node.Expand {
					return nil
				}
				_, err := s.startPod(ctx, s.newPod("app", s.firstNode(pv), "data", false))
				return err
			}},
			Step{"the claim reports the new size, no resize left", func(ctx context.Context) error { return s.resized(ctx, "data") }},
		)
	}}
}

// onlineExpansion: a claim a running pod uses is grown, and the expansion
// completes with the pod running. A driver that reports neither online
// nor offline expansion is taken as online, as the resizer does.
func onlineExpansion() Scenario {
	return Scenario{Name: "expansion-online", Applies: func(l *Lab) (bool, string) {
		switch {
		case !l.Controller.ControllerExpand && !l.Node.Expand:
			return false, "the driver cannot expand volumes (no EXPAND_VOLUME, controller or node)"
		case l.Controller.OfflineExpansion && !l.Controller.OnlineExpansion && !l.Node.OnlineExpansion:
			return false, "the driver expands offline only (VolumeExpansion OFFLINE)"
		}
		return true, ""
	}, Run: func(s *Session) error {
		var pv *corev1.PersistentVolume
		return s.Steps(
			Step{"create a claim of the Immediate class", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("data", s.Lab.ImmediateClass))
			}},
			Step{"the claim binds", func(ctx context.Context) (err error) {
				_, pv, err = s.bound(ctx, "data")
				return err
			}},
			Step{"a pod using it runs", func(ctx context.Context) error {
				_, err := s.startPod(ctx, s.newPod("app", s.firstNode(pv), "data", false))
				return err
			}},
			Step{"raise the claim's request", func(ctx context.Context) error { return s.grow(ctx, "data") }},
			Step{"the claim reports the new size, no resize left", func(ctx context.Context) error { return s.resized(ctx, "data") }},
		)
	}}
}

// grow raises the claim's request to biggerSize.
func (s *Session) grow(ctx context.Context, claim string) error {
	s.About(claim)
	patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, biggerSize)
	_, err := s.Lab.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Patch(ctx, claim, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// pvGrown waits until the PV's capacity is at least biggerSize.
func (s *Session) pvGrown(ctx context.Context, name string) error {
	want := resource.MustParse(biggerSize)
	return waitFor(ctx, "PersistentVolume", "", name, "PV "+name+" to hold "+biggerSize, func(ctx context.Context) (string, error) {
		pv, err := s.Lab.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(want) < 0 {
			return fmt.Sprintf("PV %s holds %s", name, got.String()), nil
		}
		return "", nil
	})
}

// resized waits until the claim's status capacity is at least biggerSize
// and no resize condition is left on it.
func (s *Session) resized(ctx context.Context, claim string) error {
	want := resource.MustParse(biggerSize)
	_, err := s.waitClaim(ctx, claim, "claim "+claim+" to hold "+biggerSize, func(c *corev1.PersistentVolumeClaim) string {
		if got := c.Status.Capacity[corev1.ResourceStorage]; got.Cmp(want) < 0 {
			return fmt.Sprintf("claim %s holds %s", claim, got.String())
		}
		if conds := resizeConditions(c); len(conds) > 0 {
			return fmt.Sprintf("claim %s has condition %s: %s", claim, conds[0].Type, conds[0].Message)
		}
		return ""
	})
	return err
}

// resizeConditions are the claim's conditions of a resize under way or
// failed.
func resizeConditions(c *corev1.PersistentVolumeClaim) []corev1.PersistentVolumeClaimCondition {
	var out []corev1.PersistentVolumeClaimCondition
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case corev1.PersistentVolumeClaimResizing, corev1.PersistentVolumeClaimFileSystemResizePending,
			corev1.PersistentVolumeClaimControllerResizeError, corev1.PersistentVolumeClaimNodeResizeError:
			out = append(out, cond)
		}
	}
	return out
}
