package conformance

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// accessModes: a claim of every access mode the user says the driver
// supports binds and is used by a pod; a mode many nodes may share is
// used by a pod on each of two nodes at once, when the volume may be
// reached from any node.
func accessModes() Scenario {
	return Scenario{Name: "access-modes", Applies: func(l *Lab) (bool, string) {
		if len(l.AccessModes) < 2 {
			return false, "the driver is said to support one access mode only (Lab.AccessModes), which every scenario uses"
		}
		return true, ""
	}, Run: func(s *Session) error {
		var steps []Step
		for i, mode := range s.Lab.AccessModes {
			claim := fmt.Sprintf("mode-%d", i)
			steps = append(steps, Step{fmt.Sprintf("a %s claim binds and pods use it", mode), func(ctx context.Context) error {
				return s.useMode(ctx, claim, mode)
			}})
		}
		return s.Steps(steps...)
	}}
}

// useMode makes a claim of mode, waits until it binds and starts its pods.
func (s *Session) useMode(ctx context.Context, claim string, mode corev1.PersistentVolumeAccessMode) error {
	c := s.newClaim(claim, s.Lab.ImmediateClass, func(c *corev1.PersistentVolumeClaim) {
		c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{mode}
	})
	if err := s.createClaim(ctx, c); err != nil {
		return err
	}
	_, pv, err := s.bound(ctx, claim)
	if err != nil {
		return err
	}
	first, err := s.startPod(ctx, s.newPod(claim+"-a", s.firstNode(pv), claim, false))
	if err != nil || !manyNodes(mode) || pv.Spec.NodeAffinity != nil || len(s.Lab.Nodes) < 2 {
		return err
	}
	_, err = s.startPod(ctx, s.newPod(claim+"-b", otherThan(s.Lab.Nodes, first.Spec.NodeName), claim, false))
	return err
}

// manyNodes says whether pods of many nodes may use a volume of mode.
func manyNodes(mode corev1.PersistentVolumeAccessMode) bool {
	return strings.HasPrefix(string(mode), "ReadWriteMany") || mode == corev1.ReadOnlyMany
}

func otherThan(nodes []string, node string) string {
	for _, n := range nodes {
		if n != node {
			return n
		}
	}
	return node
}
