package nodeagent

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/stacktest"
)

// A volume whose driver requires attaching: the agent reports it in use,
// waits (no Running, no stage) until the attachment is attached and the
// node lists it in volumesAttached, then publishes; deleting the pod drops
// it from volumesInUse.
func TestAttachRequiredVolumeIsReportedInUseAndWaitsForAttachment(t *testing.T) {
	ns := stacktest.Namespace(t)
	node := bed.cp.Nodes[0]
	pv := boundClaimOf(t, ns, "net", bed.attachDriver)
	handle := pv.Spec.CSI.VolumeHandle
	unique := attachment.UniqueVolumeName(attachDriverName, handle)
	pod := runPod(t, ns, "app", node, "net")
	stacktest.Eventually(t, "volume reported in use", func() string {
		if got := inUse(node); !slices.Contains(got, unique) {
			return fmt.Sprintf("volumesInUse %v", got)
		}
		return ""
	}, alive)
	staging := layout(node).StagingPath(attachDriverName, handle)
	stacktest.Holds(t, "not staged before attachment", time.Second, func() string {
		if mounted(staging) {
			return "staged before the attachment"
		}
		return ""
	})

	attachByHand(t, node, pv)
	waitRunning(t, pod)
	if !mounted(staging) {
		t.Errorf("staging %s not mounted", staging)
	}

	// The pod goes once unpublished; the unstage, then the volumesInUse
	// drop, may follow it, as the kubelet's.
	deletePodAndWaitGone(t, pod)
	stacktest.Eventually(t, "volume no longer in use", func() string {
		if got := inUse(node); slices.Contains(got, unique) {
			return fmt.Sprintf("volumesInUse %v still lists the volume", got)
		}
		return ""
	}, alive)
}

// attachByHand does what the attach/detach controller and the attacher
// would for a volume of the attach driver: ControllerPublishVolume, an
// attached VolumeAttachment, and the volume in the node's volumesAttached;
// all undone when the test ends.
func attachByHand(t *testing.T, node string, pv *corev1.PersistentVolume) {
	t.Helper()
	handle := pv.Spec.CSI.VolumeHandle
	unique := attachment.UniqueVolumeName(attachDriverName, handle)
	metadata, err := bed.attachDriver.ControllerPublishVolume(ctx, &csipb.ControllerPublishVolumeRequest{VolumeId: handle,
		NodeId: node, VolumeCapability: &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}})
	if err != nil {
		t.Fatalf("ControllerPublishVolume: %v", err)
	}
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachment.Name(handle, attachDriverName, node)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: attachDriverName, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv.Name}}}
	va, err = bed.cp.Client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.cp.Client.StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{}) })
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: metadata}
	if _, err := bed.cp.Client.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setVolumesAttached(t, node, []corev1.AttachedVolume{{Name: unique}})
	t.Cleanup(func() { setVolumesAttached(t, node, nil) })
}

func setVolumesAttached(t *testing.T, node string, vols []corev1.AttachedVolume) {
	t.Helper()
	var value any
	if len(vols) > 0 {
		value = vols
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"volumesAttached": value}})
	if _, err := bed.cp.Client.CoreV1().Nodes().PatchStatus(ctx, node, patch); err != nil {
		t.Fatal(err)
	}
}
