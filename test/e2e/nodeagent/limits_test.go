package nodeagent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/mounting"
	"github.com/volplane/volplane/internal/stacktest"
)

// The kubelet's attach limit (MutableCSINodeAllocatableCount): the attach
// driver of node-1 gets a nodeAllocatableUpdatePeriodSeconds; the volume
// limit its NodeGetInfo answers is changed behind the agent's back (the
// drivers' tap), and attachments that failed are written by hand as the
// attacher writes them (status.attachError with its gRPC code).

// withUpdatePeriod sets the attach driver's period (nil: none) until the
// test ends.
func withUpdatePeriod(t *testing.T, seconds *int64) {
	t.Helper()
	set := func(p *int64) {
		d, err := bed.cp.Client.StorageV1().CSIDrivers().Get(ctx, attachDriverName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.NodeAllocatableUpdatePeriodSeconds = p
		if _, err := bed.cp.Client.StorageV1().CSIDrivers().Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	set(seconds)
	t.Cleanup(func() { set(nil) })
}

// driverLimit makes the drivers answer NodeGetInfo with limit until the
// test ends.
func driverLimit(t *testing.T, limit int64) {
	bed.tap.maxVolumes.Store(limit)
	t.Cleanup(func() { bed.tap.maxVolumes.Store(0) })
}

// allocatable is the attach driver's count in node's CSINode, or why not.
func allocatable(node string, want int32) string {
	n, err := bed.cp.Client.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	for _, d := range n.Spec.Drivers {
		if d.Name != attachDriverName {
			continue
		}
		if d.Allocatable == nil || d.Allocatable.Count == nil || *d.Allocatable.Count != want {
			return fmt.Sprintf("allocatable %v, want %d", d.Allocatable, want)
		}
		return ""
	}
	return fmt.Sprintf("no %s in CSINode %s", attachDriverName, node)
}

// failedAttachment writes the attachment of pv on node as the attacher
// does after ControllerPublishVolume failed with code.
func failedAttachment(t *testing.T, node string, pv *corev1.PersistentVolume, code codes.Code, at time.Time) *storagev1.VolumeAttachment {
	t.Helper()
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachment.Name(pv.Spec.CSI.VolumeHandle, attachDriverName, node)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: attachDriverName, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv.Name}}}
	va, err := bed.cp.Client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.cp.Client.StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{}) })
	return failAttachment(t, va, code, at)
}

func failAttachment(t *testing.T, va *storagev1.VolumeAttachment, code codes.Code, at time.Time) *storagev1.VolumeAttachment {
	t.Helper()
	va.Status = storagev1.VolumeAttachmentStatus{AttachError: &storagev1.VolumeError{Time: metav1.NewTime(at),
		Message: "rpc error: code = " + code.String() + " desc = node has no room", ErrorCode: ptr.To(int32(code))}}
	va, err := bed.cp.Client.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return va
}

// A driver with an update period has its count asked again each period:
// the CSINode follows a limit changed at the driver.
func TestAllocatableCountFollowsTheDriverEachPeriod(t *testing.T) {
	node := bed.cp.Nodes[0]
	driverLimit(t, 7)
	withUpdatePeriod(t, ptr.To[int64](10))
	stacktest.Eventually(t, "CSINode allocatable 7 within the 10s period", func() string { return allocatable(node, 7) }, alive)
	driverLimit(t, 5)
	stacktest.Eventually(t, "CSINode allocatable 5 at the next period", func() string { return allocatable(node, 5) }, alive)
}

// An attachment of the node that failed with ResourceExhausted asks the
// driver at once (the period is an hour), once per failure: the same
// failure seen again asks nothing, the attacher's next one asks again.
// Another code, and a driver without a period, ask nothing.
func TestResourceExhaustedAttachmentRefreshesTheCountOnce(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[0]
	withUpdatePeriod(t, ptr.To[int64](3600))
	pvA := boundClaimOf(t, ns, "a", bed.attachDriver)
	pvB := boundClaimOf(t, ns, "b", bed.attachDriver)
	driverLimit(t, 4)
	before := bed.tap.nodeInfos.Load()
	failedAttachment(t, node, pvB, codes.Internal, time.Now())
	stacktest.Holds(t, "no ask for an Internal failure", time.Second, func() string {
		if n := bed.tap.nodeInfos.Load(); n != before {
			return fmt.Sprintf("%d NodeGetInfo calls", n-before)
		}
		return ""
	})

	at := time.Now().Truncate(time.Second)
	va := failedAttachment(t, node, pvA, codes.ResourceExhausted, at)
	stacktest.Eventually(t, "CSINode refreshed at once", func() string { return allocatable(node, 4) }, alive)
	asked := bed.tap.nodeInfos.Load()
	if asked-before != 1 {
		t.Errorf("%d NodeGetInfo calls for one failure, want 1", asked-before)
	}
	va.Labels = map[string]string{"seen": "again"}
	va, err := bed.cp.Client.StorageV1().VolumeAttachments().Update(ctx, va, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stacktest.Holds(t, "the same failure asks nothing more", time.Second, func() string {
		if n := bed.tap.nodeInfos.Load(); n != asked {
			return fmt.Sprintf("%d more NodeGetInfo calls", n-asked)
		}
		return ""
	})
	driverLimit(t, 3)
	failAttachment(t, va, codes.ResourceExhausted, at.Add(time.Second))
	stacktest.Eventually(t, "the next failure refreshes again", func() string { return allocatable(node, 3) }, alive)
}

// Node-1's attach driver takes one volume (its limit, N = 1): the first
// pod's volume is attached and it runs; the second pod's attachment fails
// with ResourceExhausted and, once its attach-and-mount wait ends, the
// pod is rejected as the kubelet rejects it: phase Failed, reason
// VolumeAttachmentLimitExceeded, the kubelet's message and Warning event.
// A pod placed on the node by spec.nodeName goes through the same check.
// A pod whose attachment failed otherwise waits on.
func TestPodBeyondTheAttachLimitIsRejectedAsByTheKubelet(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[0]
	driverLimit(t, 1)
	withUpdatePeriod(t, ptr.To[int64](3600))
	pvFirst := boundClaimOf(t, ns, "first", bed.attachDriver)
	first := runPod(t, ns, "first", node, "first")
	attachByHand(t, node, pvFirst)
	waitRunning(t, first)

	pvSecond := boundClaimOf(t, ns, "second", bed.attachDriver)
	pvOther := boundClaimOf(t, ns, "other", bed.attachDriver)
	second := runPod(t, ns, "second", node, "second")
	other := runPod(t, ns, "other", node, "other")
	failedAttachment(t, node, pvOther, codes.Internal, time.Now())
	failedAttachment(t, node, pvSecond, codes.ResourceExhausted, time.Now())

	want := "Node has reached its volume attachment limit, rejecting pod. unmounted volumes=[vol-second], unattached volumes=[vol-second], failed to process volumes=[]: context deadline exceeded"
	stacktest.Eventually(t, "second pod rejected", func() string {
		p, err := bed.cp.Client.CoreV1().Pods(ns).Get(ctx, second.Name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if p.Status.Phase != corev1.PodFailed || p.Status.Reason != mounting.VolumeAttachmentLimitExceeded || p.Status.Message != "Pod was rejected: "+want {
			return fmt.Sprintf("phase %s reason %q message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		return ""
	}, alive)
	stacktest.Eventually(t, "rejection event", func() string {
		return hasEvent(t, ns, second.Name, mounting.VolumeAttachmentLimitExceeded, want)
	}, alive)
	stacktest.Holds(t, "the pod whose attachment failed otherwise waits on", 4*time.Second, func() string {
		p, err := bed.cp.Client.CoreV1().Pods(ns).Get(ctx, other.Name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if p.Status.Phase == corev1.PodFailed || strings.Contains(p.Status.Message, "rejected") {
			return fmt.Sprintf("phase %s message %q", p.Status.Phase, p.Status.Message)
		}
		return ""
	})
	if p, err := bed.cp.Client.CoreV1().Pods(ns).Get(ctx, first.Name, metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("first pod: %v, %v", p.Status.Phase, err)
	}
	for _, p := range []*corev1.Pod{first, second, other} {
		_ = bed.cp.Client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{})
		waitGone(t, p)
	}
}
