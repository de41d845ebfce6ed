package conformance

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// modifyAttributes: a bound claim is given the lab's
// VolumeAttributesClass, and the modification completes
// (status.currentVolumeAttributesClassName, no modification under way).
func modifyAttributes() Scenario {
	return Scenario{Name: "modify-volume-attributes", Applies: func(l *Lab) (bool, string) {
		switch {
		case !l.Controller.Modify:
			return false, "the driver cannot modify volumes (no MODIFY_VOLUME)"
		case l.AttributesClass == "":
			return false, "no VolumeAttributesClass of the driver"
		}
		return true, ""
	}, Run: func(s *Session) error {
		class := s.Lab.AttributesClass
		return s.Steps(
			Step{"create a claim of the Immediate class", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("data", s.Lab.ImmediateClass))
			}},
			Step{"the claim binds", func(ctx context.Context) error {
				_, _, err := s.bound(ctx, "data")
				return err
			}},
			Step{"set the claim's VolumeAttributesClass", func(ctx context.Context) error {
				patch := fmt.Sprintf(`{"spec":{"volumeAttributesClassName":%q}}`, class)
				_, err := s.Lab.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Patch(ctx, "data", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				return err
			}},
			Step{"the claim reports the class as current", func(ctx context.Context) error {
				_, err := s.waitClaim(ctx, "data", "claim data's current VolumeAttributesClass "+class, func(c *corev1.PersistentVolumeClaim) string {
					if cur := c.Status.CurrentVolumeAttributesClassName; cur == nil || *cur != class {
						return fmt.Sprintf("current class %v, modify status %+v", deref(cur), c.Status.ModifyVolumeStatus)
					}
					if c.Status.ModifyVolumeStatus != nil {
						return fmt.Sprintf("modify status %+v", *c.Status.ModifyVolumeStatus)
					}
					return ""
				})
				return err
			}},
		)
	}}
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}
