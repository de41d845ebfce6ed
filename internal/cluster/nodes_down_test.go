package cluster_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/stacktest"
)

// A node taken down says Ready Unknown at once (no 40s grace period to wait
// out); brought up, it reports Ready and renews its Lease at once. Taken
// down, the node lifecycle controller taints it unreachable; the cleanup
// waits for the taint to go, so the next tests schedule on both nodes.
func TestSetNodeDownTurnsReadyUnknownAndBack(t *testing.T) {
	cp := stacktest.ControlPlane(t)
	ctx := context.Background()
	const name = "node-2"
	readyCondition := func() (corev1.NodeCondition, []corev1.Taint, error) {
		node, err := cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return corev1.NodeCondition{}, nil, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c, node.Spec.Taints, nil
			}
		}
		return corev1.NodeCondition{}, node.Spec.Taints, nil
	}
	t.Cleanup(func() {
		if err := cp.SetNodeDown(ctx, name, false); err != nil {
			t.Error(err)
		}
		stacktest.Eventually(t, "node back without the unreachable taint", func() string {
			_, taints, err := readyCondition()
			if err != nil {
				return err.Error()
			}
			for _, taint := range taints {
				if taint.Key == corev1.TaintNodeUnreachable || taint.Key == corev1.TaintNodeNotReady {
					return fmt.Sprintf("taints %v", taints)
				}
			}
			return ""
		}, nil)
	})
	if err := cp.SetNodeDown(ctx, "node-99", true); err == nil {
		t.Error("taking down a node that is not simulated succeeded")
	}

	if err := cp.SetNodeDown(ctx, name, true); err != nil {
		t.Fatal(err)
	}
	c, _, err := readyCondition()
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" {
		t.Errorf("node taken down: Ready %s (%s), want Unknown (NodeStatusUnknown)", c.Status, c.Reason)
	}

	before := metav1.Now()
	if err := cp.SetNodeDown(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	c, _, err = readyCondition()
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != corev1.ConditionTrue {
		t.Errorf("node brought up: Ready %s (%s), want True", c.Status, c.Reason)
	}
	lease, err := cp.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Time.Before(before.Truncate(1e6)) {
		t.Errorf("node brought up: lease renewed at %v, want at or after %v", lease.Spec.RenewTime, before)
	}
}
