package conformance

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// dynamicMount is the basic lifecycle: a claim of the Immediate class is
// provisioned and bound; a pod writes into it; after that pod is gone, a
// second one (on another node when the driver attaches, so that the volume
// is detached and attached again elsewhere) reads it back; deleting the
// claim deletes the PV and the backend volume (reclaim policy Delete).
func dynamicMount() Scenario {
	return Scenario{Name: "dynamic-provisioning-mount", Applies: always, Run: func(s *Session) error {
		var pv *corev1.PersistentVolume
		var writer, reader *corev1.Pod
		return s.Steps(
			Step{"create a claim of the Immediate class", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("data", s.Lab.ImmediateClass))
			}},
			Step{"the claim binds", func(ctx context.Context) (err error) {
				_, pv, err = s.bound(ctx, "data")
				return err
			}},
			Step{"a pod using it runs", func(ctx context.Context) (err error) {
				writer, err = s.startPod(ctx, s.newPod("writer", s.firstNode(pv), "data", false))
				return err
			}},
			Step{"the pod writes a file", func(context.Context) error { return s.writeFile(writer, pv.Name, s.Namespace) }},
			Step{"the pod is deleted", func(ctx context.Context) error { return s.deletePod(ctx, "writer") }},
			Step{"a second pod using it runs", func(ctx context.Context) (err error) {
				reader, err = s.startPod(ctx, s.newPod("reader", s.otherNode(pv, writer), "data", false))
				return err
			}},
			Step{"the second pod reads the file back", func(context.Context) error { return s.readFile(reader, pv.Name, s.Namespace) }},
			Step{"the second pod is deleted", func(ctx context.Context) error { return s.deletePod(ctx, "reader") }},
			Step{"delete the claim: its PV and backend volume go", func(ctx context.Context) error {
				return s.reclaimed(ctx, "data")
			}},
		)
	}}
}

// firstNode is where a scenario's first pod of pv goes: the lab's first
// node, unless the PV is reached from some nodes only (its node affinity),
// and then wherever the scheduler puts it.
func (s *Session) firstNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity != nil {
		return ""
	}
	return s.Lab.Nodes[0]
}

// otherNode is where a second pod of pv goes after first: another node
// when the driver attaches volumes and the PV may be reached from any node
// (the volume then is detached and attached there), else first's node.
func (s *Session) otherNode(pv *corev1.PersistentVolume, first *corev1.Pod) string {
	if s.Lab.Controller.Publish && pv.Spec.NodeAffinity == nil {
		for _, n := range s.Lab.Nodes {
			if n != first.Spec.NodeName {
				return n
			}
		}
	}
	return first.Spec.NodeName
}

// reclaimed deletes a claim whose PV has reclaim policy Delete and waits
// until the PV is gone, then checks the driver lists its volume no more.
func (s *Session) reclaimed(ctx context.Context, claim string) error {
	pv, err := s.deleteClaim(ctx, claim)
	if err != nil || pv == nil {
		return err
	}
	if err := s.pvGone(ctx, pv.Name); err != nil {
		return err
	}
	found, _, err := s.onBackend(ctx, pv.Spec.CSI.VolumeHandle)
	if err != nil {
		return err
	}
	if found {
		return fmt.Errorf("PV %s is gone, yet the driver still lists its volume %s", pv.Name, pv.Spec.CSI.VolumeHandle)
	}
	return nil
}
