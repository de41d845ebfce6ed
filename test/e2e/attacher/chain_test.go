package attacher

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
)

// The whole chain for an in-tree volume of a migrated plugin, with
// `volplane controller --controllers attachdetach,attacher`: a pod using a
// claim bound to an awsElasticBlockStore PV gets the reference's
// VolumeAttachment for ebs.csi.aws.com, the driver serving that name
// publishes it, the node reports the volume under its CSI unique name and
// the pod is told; with the pod gone it is unpublished and the attachment
// deleted.
func TestPodOfAMigratedPVIsAttachedThroughItsCSIDriver(t *testing.T) {
	e := newEnv(t)
	loops := stacktest.StartLoops(manager.Config{REST: stacktest.ControlPlane(t).RESTConfig,
		Controllers: []string{manager.AttachDetach, manager.Attacher}, CSIEndpoints: bed.endpoints,
		Workers: 2, ResyncPeriod: 2 * time.Second})
	t.Cleanup(func() {
		if err := loops.Stop(); err != nil {
			t.Errorf("loops: %v", err)
		}
	})
	handle := createVolume(t, awsEBS, e.ns+"-chain")
	pvName := e.boundEBSClaim("data", handle)
	_, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.PodSpec{NodeName: bed.node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	name := attachment.Name(handle, awsEBS, bed.node)
	unique := attachment.UniqueVolumeName(awsEBS, handle)
	stacktest.Eventually(t, "attached and reported", func() string {
		va := e.getVA(name)
		if va == nil || !va.Status.Attached {
			return fmt.Sprintf("attachment %v", va)
		}
		n, err := e.client.CoreV1().Nodes().Get(e.ctx, bed.node, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if !slices.Contains(n.Status.VolumesAttached, corev1.AttachedVolume{Name: unique}) {
			return fmt.Sprintf("volumesAttached %v", n.Status.VolumesAttached)
		}
		return ""
	}, loops.EndedEarly)
	if va := e.getVA(name); va.Spec.Attacher != awsEBS || ptr.Deref(va.Spec.Source.PersistentVolumeName, "") != pvName {
		t.Errorf("attachment spec %+v is not the reference's", va.Spec)
	}
	if n := bed.calls.count("ControllerPublishVolume", handle); n != 1 {
		t.Errorf("ControllerPublishVolume of %s called %d times, want 1", handle, n)
	}
	msg := fmt.Sprintf(`AttachVolume.Attach succeeded for volume %q `, pvName)
	stacktest.Eventually(t, "pod told", func() string {
		list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=app"})
		if err != nil {
			return err.Error()
		}
		for _, ev := range list.Items {
			if ev.Reason == attachment.SuccessfulAttachVolume && ev.Message == msg {
				return ""
			}
		}
		return fmt.Sprintf("%d events, none %q", len(list.Items), msg)
	}, loops.EndedEarly)

	if err := e.client.CoreV1().Pods(e.ns).Delete(e.ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	stacktest.Eventually(t, "detached", func() string {
		if e.getVA(name) != nil {
			return "attachment still there"
		}
		return ""
	}, loops.EndedEarly)
	if n := bed.calls.count("ControllerUnpublishVolume", handle); n != 1 {
		t.Errorf("ControllerUnpublishVolume of %s called %d times, want 1", handle, n)
	}
}

// boundEBSClaim makes claim <name> bound by hand to an in-tree
// awsElasticBlockStore PV of the handle, and returns the PV's name.
func (e *env) boundEBSClaim(name, handle string) string {
	e.t.Helper()
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}
	modes := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	claim, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: modes, VolumeName: e.ns + "-" + name, StorageClassName: ptr.To(""),
			Resources: corev1.VolumeResourceRequirements{Requests: size}}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create claim: %v", err)
	}
	pv, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{AccessModes: modes, Capacity: size, StorageClassName: "",
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: e.ns, Name: name, UID: claim.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{
				VolumeID: handle, FSType: "ext4"}}}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create PV: %v", err)
	}
	e.t.Cleanup(func() { e.forget(func() error { return e.dropPV(pv.Name) }) })
	pv.Status.Phase = corev1.VolumeBound
	if _, err := e.client.CoreV1().PersistentVolumes().UpdateStatus(e.ctx, pv, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("PV status: %v", err)
	}
	claim.Status.Phase, claim.Status.AccessModes, claim.Status.Capacity = corev1.ClaimBound, modes, size
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).UpdateStatus(e.ctx, claim, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("claim status: %v", err)
	}
	return pv.Name
}
