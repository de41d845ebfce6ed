package attachdetach

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/stacktest"
)

// A pod using a bound CSI claim gets the reference's VolumeAttachment; an
// attacher error is shown on the pod; once the attacher says attached, the
// node reports the volume and the pod is told.
func TestPodWithBoundClaimIsAttachedReportedAndToldSo(t *testing.T) {
	e := newEnv(t)
	node := e.nodes[0]
	v := e.boundClaim("data")
	e.pod("app", node, "data")

	va := e.waitAttachment(e.vaName(v, node))
	if va.Spec.Attacher != e.driver || va.Spec.NodeName != node || va.Spec.Source.PersistentVolumeName == nil ||
		*va.Spec.Source.PersistentVolumeName != v.pv || va.Spec.Source.InlineVolumeSpec != nil {
		t.Fatalf("attachment spec %+v is not the reference's", va.Spec)
	}
	if len(va.Labels)+len(va.Annotations)+len(va.Finalizers) != 0 {
		t.Errorf("attachment metadata %+v: want no labels, annotations or finalizers", va.ObjectMeta)
	}

	e.attacherSays(va.Name, storagev1.VolumeAttachmentStatus{AttachError: &storagev1.VolumeError{
		Time: metav1.Now(), Message: "rpc error: code = Internal desc = disk on fire"}})
	e.waitEvent("app", corev1.EventTypeWarning, "FailedAttachVolume",
		fmt.Sprintf(`AttachVolume.Attach failed for volume %q : rpc error: code = Internal desc = disk on fire`, v.pv))

	e.attacherSays(va.Name, storagev1.VolumeAttachmentStatus{Attached: true})
	e.waitReported(node, e.unique(v), true)
	e.waitEvent("app", corev1.EventTypeNormal, "SuccessfulAttachVolume",
		fmt.Sprintf(`AttachVolume.Attach succeeded for volume %q `, v.pv))
}

// A volume stays attached while the node reports it in use, even with no
// pod left; once the node stops using it, it leaves volumesAttached and is
// detached.
func TestVolumeStaysAttachedWhileInUseAndIsDetachedOnceUnused(t *testing.T) {
	e := newEnv(t)
	node := e.nodes[0]
	v, va := e.podUsingAttachedVolume("app", node)

	e.forceDelete("app")
	stacktest.Holds(t, "attachment kept while in use", settle, func() string {
		if e.attachment(va.Name) == nil {
			return "detached while the node still uses it"
		}
		return ""
	})
	e.setInUse(node)
	e.waitAttachmentGone(va.Name)
	e.waitReported(node, e.unique(v), false)
}

// A driver whose CSIDriver says attachRequired: false needs no
// attachment; a driver without a CSIDriver object does.
func TestDriverWithoutAttachRequiredGetsNoVolumeAttachment(t *testing.T) {
	e := newEnv(t)
	node := e.nodes[1]
	local := e.boundClaim("local")
	e.attachRequired(false)
	otherDriver := *e
	otherDriver.driver = "other-" + e.driver
	control := otherDriver.boundClaim("control")
	e.pod("app", node, "local", "control")

	// The control volume's attachment proves the pod was looked at.
	otherDriver.waitAttachment(otherDriver.vaName(control, node))
	stacktest.Holds(t, "no attachment for attachRequired: false", settle, func() string {
		if got := e.attachmentsOf(local.pv); len(got) != 0 {
			return fmt.Sprintf("attached to %v", got)
		}
		return ""
	})
}

func (e *env) attachRequired(required bool) {
	e.t.Helper()
	_, err := e.client.StorageV1().CSIDrivers().Create(e.ctx, &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: e.driver},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: ptr.To(required)}}, metav1.CreateOptions{})
	e.must(err, "create CSIDriver")
	e.t.Cleanup(func() { _ = e.client.StorageV1().CSIDrivers().Delete(e.ctx, e.driver, metav1.DeleteOptions{}) })
}

// A node without the controller-managed annotation is the kubelet's: its
// pods' volumes are not attached by the loop.
func TestNodeWithoutManagedAnnotationIsIgnored(t *testing.T) {
	e := newEnv(t)
	node := e.node("unmanaged", false, corev1.ConditionTrue)
	v := e.boundClaim("data")
	e.pod("app", node, "data")
	stacktest.Holds(t, "nothing attached to an unmanaged node", settle, func() string {
		if got := e.attachmentsOf(v.pv); len(got) != 0 {
			return fmt.Sprintf("attached to %v", got)
		}
		return ""
	})
}

// A ReadWriteOnce volume attached to one node is not attached to a second:
// the pod there is told which pod holds it.
func TestPodOnAnotherNodeGetsMultiAttachEventAndNoSecondAttachment(t *testing.T) {
	e := newEnv(t)
	first, second := e.nodes[0], e.nodes[1]
	v := e.boundClaim("data")
	e.pod("writer", first, "data")
	va := e.waitAttachment(e.vaName(v, first))
	e.attacherSays(va.Name, storagev1.VolumeAttachmentStatus{Attached: true})

	e.pod("reader", second, "data")
	e.waitEvent("reader", corev1.EventTypeWarning, "FailedAttachVolume",
		fmt.Sprintf(`Waiting for detach for volume %q Volume is already used by pod(s) writer`, v.pv))
	stacktest.Holds(t, "one attachment only", settle, func() string {
		if got := e.attachmentsOf(v.pv); len(got) != 1 || got[0] != first {
			return fmt.Sprintf("attached to %v", got)
		}
		return ""
	})

	// Once the first pod is gone and the volume detached, it follows the
	// second pod.
	e.forceDelete("writer")
	e.waitAttachmentGone(va.Name)
	e.waitAttachment(e.vaName(v, second))
}

// Two PVs naming one backend volume (a PV made again for a retained disk,
// or adopted) are one volume: attached to one node through the first, it
// is not attached to another node through the second, and the pod there
// is told who holds it.
func TestSecondPVOfAnAttachedVolumeIsNotAttachedElsewhere(t *testing.T) {
	e := newEnv(t)
	first, second := e.nodes[0], e.nodes[1]
	old := e.boundClaim("old")
	again := e.boundClaimOf("again", old.handle)
	e.pod("writer", first, "old")
	va := e.waitAttachment(e.vaName(old, first))
	e.attacherSays(va.Name, storagev1.VolumeAttachmentStatus{Attached: true})

	e.pod("reader", second, "again")
	e.waitEvent("reader", corev1.EventTypeWarning, "FailedAttachVolume",
		fmt.Sprintf(`Waiting for detach for volume %q Volume is already used by pod(s) writer`, again.pv))
	stacktest.Holds(t, "no attachment through the second PV", settle, func() string {
		if got := e.attachmentsOf(again.pv); len(got) != 0 {
			return fmt.Sprintf("attached through %s to %v", again.pv, got)
		}
		return ""
	})
}

// The out-of-service taint lets a volume go although the node still
// reports it in use.
func TestOutOfServiceNodeLosesItsVolumesWhileStillInUse(t *testing.T) {
	e := newEnv(t)
	node := e.node("lost", true, corev1.ConditionTrue)
	v, va := e.podUsingAttachedVolume("app", node)
	e.forceDelete("app")
	before := counter("attach_detach_controller_attachdetach_controller_forced_detaches", "reason", "out-of-service")

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.client.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown",
			Effect: corev1.TaintEffectNoExecute})
		_, err = e.client.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{})
		return err
	})
	e.must(err, "taint node")

	e.waitAttachmentGone(va.Name)
	e.waitReported(node, e.unique(v), false)
	if after := counter("attach_detach_controller_attachdetach_controller_forced_detaches", "reason", "out-of-service"); after != before+1 {
		t.Errorf("forced detaches (out-of-service) %v → %v, want one more", before, after)
	}
}

// On a node that is not Ready, a volume still reported in use is detached
// once the unmount wait has run out, and not before.
func TestNotReadyNodeLosesAnUnwantedVolumeAfterTheUnmountWait(t *testing.T) {
	e := newEnv(t)
	node := e.node("down", true, corev1.ConditionFalse)
	_, va := e.podUsingAttachedVolume("app", node)
	before := counter("attach_detach_controller_attachdetach_controller_forced_detaches", "reason", "timeout")

	e.forceDelete("app")
	stacktest.Holds(t, "kept during the unmount wait", unmountWait/2, func() string {
		if e.attachment(va.Name) == nil {
			return "detached before the unmount wait ran out"
		}
		return ""
	})
	e.waitAttachmentGone(va.Name)
	if after := counter("attach_detach_controller_attachdetach_controller_forced_detaches", "reason", "timeout"); after != before+1 {
		t.Errorf("forced detaches (timeout) %v → %v, want one more", before, after)
	}
}

// A deleted node's volumes wait for the unmount wait when it last reported
// them in use (there is no fast path for a deleted node), then go.
func TestDeletedNodeLosesItsVolumesAfterTheUnmountWait(t *testing.T) {
	e := newEnv(t)
	node := e.node("gone", true, corev1.ConditionTrue)
	_, va := e.podUsingAttachedVolume("app", node)
	e.eventually("the loop sees the volume in use", func() string {
		n, err := e.client.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
		if err != nil || len(n.Status.VolumesInUse) != 1 {
			return fmt.Sprintf("node %v err %v", n.Status.VolumesInUse, err)
		}
		return ""
	})

	e.forceDelete("app")
	e.must(e.client.CoreV1().Nodes().Delete(e.ctx, node, metav1.DeleteOptions{}), "delete node")
	stacktest.Holds(t, "kept during the unmount wait", unmountWait/2, func() string {
		if e.attachment(va.Name) == nil {
			return "detached before the unmount wait ran out"
		}
		return ""
	})
	e.waitAttachmentGone(va.Name)
}

// podUsingAttachedVolume is the common start: a bound claim "data", pod
// on node using it, its VolumeAttachment attached (the test plays the
// attacher), reported attached, and the node reporting it in use (the
// test plays the kubelet).
func (e *env) podUsingAttachedVolume(pod, node string) (volume, *storagev1.VolumeAttachment) {
	e.t.Helper()
	v := e.boundClaim("data")
	e.pod(pod, node, "data")
	va := e.waitAttachment(e.vaName(v, node))
	e.attacherSays(va.Name, storagev1.VolumeAttachmentStatus{Attached: true})
	e.waitReported(node, e.unique(v), true)
	e.setInUse(node, e.unique(v))
	return v, va
}
