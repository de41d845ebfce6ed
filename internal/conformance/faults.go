package conformance

import (
	"context"
	"fmt"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// needFaults: the fault scenario needs a lab that can fault the loops'
// calls of the driver's controller.
func needFaults(l *Lab) (bool, string) {
	if l.Faults == nil || l.InjectedFaults == nil {
		return false, "no fault proxy in front of the driver"
	}
	return true, ""
}

// faultsScenario: with faults injected into the loops' calls of the
// driver's controller (calls failed before they are done, done but
// reported as timed out, delayed), the whole lifecycle the driver's
// capabilities allow still goes through: a claim binds, a pod using it
// runs (the volume attached when the driver publishes), the volume grows
// when the controller expands, a snapshot of it becomes ready when the
// driver snapshots; then pod, snapshot and claim are deleted and the PV
// goes. The loops retry; a driver that does not answer a retried call
// idempotently (a second volume for a retried CreateVolume, an error for
// a retried DeleteVolume of a volume already gone) fails here, or leaks a
// volume, snapshot or attachment the invariant check after the scenario
// finds.
func faultsScenario() Scenario {
	// Faults compound: a call faulted three or four times in a row waits
	// out the loops' backoff (1, 2, 4, 8 s), and every step may meet that.
	return Scenario{Name: "faults", Applies: needFaults, MinTimeout: 3 * time.Minute, Run: func(s *Session) error {
		lab := s.Lab
		before := lab.InjectedFaults()
		lab.Faults(true)
		defer lab.Faults(false)
		// A driver with few faulted calls in the lifecycle (no attach, no
		// snapshot) may draw none in one round (one in two is faulted):
		// another round, with new names, draws anew.
		for round := 1; round <= faultRounds; round++ {
			if err := faultedLifecycle(s, fmt.Sprintf("-%d", round)); err != nil {
				return err
			}
			if lab.InjectedFaults() > before {
				break
			}
		}
		lab.Faults(false)
		return s.Step("turn faults off: calls were faulted", func(context.Context) error {
			if lab.InjectedFaults() <= before {
				return fmt.Errorf("no call was faulted in %d rounds: the faults did not reach the driver", faultRounds)
			}
			return nil
		})
	}}
}

// faultRounds bounds the lifecycle's rounds until a call is faulted.
const faultRounds = 4

// faultedLifecycle is one round of the faults scenario; suffix names its
// objects apart from the other rounds'.
func faultedLifecycle(s *Session, suffix string) error {
	lab := s.Lab
	expand := lab.Controller.ControllerExpand
	snapshot := lab.Controller.Snapshot && lab.SnapshotClass != "" && lab.Snapshots != nil
	claim, pod, snap := "data"+suffix, "app"+suffix, "snap"+suffix
	var pv *corev1.PersistentVolume
	var content string
	return s.Steps(
		Step{"turn faults on; create a claim of the Immediate class", func(ctx context.Context) error {
			return s.createClaim(ctx, s.newClaim(claim, lab.ImmediateClass))
		}},
		Step{"the claim binds", func(ctx context.Context) (err error) {
			_, pv, err = s.bound(ctx, claim)
			return err
		}},
		Step{"raise the claim's request (when the controller expands)", func(ctx context.Context) error {
			if !expand {
				return nil
			}
			if err := s.grow(ctx, claim); err != nil {
				return err
			}
			return s.pvGrown(ctx, pv.Name)
		}},
		Step{"a pod using it runs (the volume attached when the driver publishes)", func(ctx context.Context) error {
			p, err := s.startPod(ctx, s.newPod(pod, s.firstNode(pv), claim, false))
			if err != nil || !lab.Controller.Publish {
				return err
			}
			return s.attached(ctx, pv.Name, p.Spec.NodeName)
		}},
		Step{"the claim reports the new size (when the controller expands)", func(ctx context.Context) error {
			if !expand {
				return nil
			}
			return s.resized(ctx, claim)
		}},
		Step{"snapshot the claim: the snapshot is ready to use (when the driver snapshots)", func(ctx context.Context) (err error) {
			if !snapshot {
				return nil
			}
			content, err = s.readySnapshot(ctx, snap, claim)
			return err
		}},
		Step{"the pod is deleted, and the volume detached", func(ctx context.Context) error {
			if err := s.deletePod(ctx, pod); err != nil {
				return err
			}
			return s.detached(ctx, pv.Name)
		}},
		Step{"the snapshot is deleted, its content too", func(ctx context.Context) error {
			if !snapshot {
				return nil
			}
			if err := s.deleteSnapshots(ctx); err != nil {
				return err
			}
			return s.contentGone(ctx, content)
		}},
		Step{"delete the claim: its PV and backend volume go", func(ctx context.Context) error {
			return s.reclaimed(ctx, claim)
		}},
	)
}

// readySnapshot snapshots claim as name, waits until it is ready to use
// and returns its VolumeSnapshotContent's name.
func (s *Session) readySnapshot(ctx context.Context, name, claim string) (string, error) {
	s.About(claim)
	snaps := s.Lab.Snapshots.SnapshotV1().VolumeSnapshots(s.Namespace)
	vs := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace},
		Spec: snapv1.VolumeSnapshotSpec{
			Source:                  snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(claim)},
			VolumeSnapshotClassName: ptr.To(s.Lab.SnapshotClass),
		},
	}
	if _, err := snaps.Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	if err := s.snapshotReady(ctx, name); err != nil {
		return "", err
	}
	vs, err := snaps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return ptr.Deref(vs.Status.BoundVolumeSnapshotContentName, ""), nil
}

// contentGone waits until the VolumeSnapshotContent is gone: the driver
// deleted the backend snapshot.
func (s *Session) contentGone(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	return waitFor(ctx, "VolumeSnapshotContent", "", name, "snapshot content "+name+" to be gone", func(ctx context.Context) (string, error) {
		_, err := s.Lab.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return "", nil
		case err != nil:
			return err.Error(), nil
		}
		return "snapshot content " + name + " is still there", nil
	})
}

// attached waits until a VolumeAttachment of the PV to node says attached.
func (s *Session) attached(ctx context.Context, pv, node string) error {
	return waitFor(ctx, "PersistentVolume", "", pv, "PV "+pv+" to be attached to node "+node, func(ctx context.Context) (string, error) {
		l, err := s.Lab.Client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error(), nil
		}
		for _, va := range l.Items {
			if ptr.Deref(va.Spec.Source.PersistentVolumeName, "") == pv && va.Spec.NodeName == node {
				if va.Status.Attached {
					return "", nil
				}
				return fmt.Sprintf("VolumeAttachment %s is not attached", va.Name), nil
			}
		}
		return fmt.Sprintf("no VolumeAttachment of PV %s to node %s", pv, node), nil
	})
}

// detached waits until no VolumeAttachment of the PV is left.
func (s *Session) detached(ctx context.Context, pv string) error {
	return waitFor(ctx, "PersistentVolume", "", pv, "PV "+pv+" to be detached", func(ctx context.Context) (string, error) {
		l, err := s.Lab.Client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error(), nil
		}
		for _, va := range l.Items {
			if ptr.Deref(va.Spec.Source.PersistentVolumeName, "") == pv {
				return fmt.Sprintf("VolumeAttachment %s to node %s is still there", va.Name, va.Spec.NodeName), nil
			}
		}
		return "", nil
	})
}
