package attachdetach

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/stacktest"
)

// gcePD is the CSI driver the in-tree gcePersistentDisk plugin is
// migrated to; a disk without zone labels gets csi-translation-lib's
// UNSPECIFIED project and zone in its handle.
const gcePD = "pd.csi.storage.gke.io"

func gceHandle(disk string) string { return "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/" + disk }

// A pod using a claim bound to an in-tree gcePersistentDisk PV gets the
// VolumeAttachment the reference makes through csi-translation-lib: for
// the CSI driver, named after the translated handle, naming the PV. Once
// attached it is reported under its CSI unique name; the pod gone, it is
// detached.
func TestMigratedGCEPDClaimIsAttachedAsItsCSIDriver(t *testing.T) {
	e := newEnv(t)
	node := e.nodes[0]
	disk := e.ns + "-disk"
	v := e.boundClaimSource("data", corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{
		PDName: disk, FSType: "ext4"}})
	e.pod("app", node, "data")

	name := attachment.Name(gceHandle(disk), gcePD, node)
	va := e.waitAttachment(name)
	if va.Spec.Attacher != gcePD || va.Spec.NodeName != node || va.Spec.Source.PersistentVolumeName == nil ||
		*va.Spec.Source.PersistentVolumeName != v.pv || va.Spec.Source.InlineVolumeSpec != nil {
		t.Fatalf("attachment spec %+v is not the reference's", va.Spec)
	}
	e.attacherSays(name, storagev1.VolumeAttachmentStatus{Attached: true})
	e.waitReported(node, attachment.UniqueVolumeName(gcePD, gceHandle(disk)), true)
	e.waitEvent("app", corev1.EventTypeNormal, "SuccessfulAttachVolume",
		fmt.Sprintf(`AttachVolume.Attach succeeded for volume %q `, v.pv))
	e.forceDelete("app")
	e.waitAttachmentGone(name)
	e.waitReported(node, attachment.UniqueVolumeName(gcePD, gceHandle(disk)), false)
}

// A pod's inline awsElasticBlockStore volume is attached with the
// translated spec in the attachment, and detached when the pod goes.
func TestInlineMigratedVolumeIsAttachedWithItsTranslatedSpec(t *testing.T) {
	e := newEnv(t)
	node := e.nodes[1]
	handle := "vol-" + e.ns
	_, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes: []corev1.Volume{{Name: "disk", VolumeSource: corev1.VolumeSource{
				AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: handle, FSType: "xfs"}}}}}},
		metav1.CreateOptions{})
	e.must(err, "create pod")
	name := attachment.Name(handle, "ebs.csi.aws.com", node)
	va := e.waitAttachment(name)
	spec := va.Spec.Source.InlineVolumeSpec
	if va.Spec.Attacher != "ebs.csi.aws.com" || va.Spec.Source.PersistentVolumeName != nil || spec == nil || spec.CSI == nil ||
		spec.CSI.VolumeHandle != handle || spec.CSI.FSType != "xfs" {
		t.Fatalf("attachment spec %+v is not the reference's", va.Spec)
	}
	e.forceDelete("app")
	e.waitAttachmentGone(name)
}

// An iscsi PV's controller-side attach does nothing: the reference reports
// it attached at once, tells the pod, and makes no VolumeAttachment. With
// the pod gone it stays while the node uses it, and leaves volumesAttached
// once the node stops.
func TestISCSIClaimIsReportedAttachedAtOnceWithNoAttachment(t *testing.T) {
	e := newEnv(t)
	node := e.nodes[0]
	iqn := "iqn.2026-11.io.volplane:" + e.ns
	v := e.boundClaimSource("data", corev1.PersistentVolumeSource{ISCSI: &corev1.ISCSIPersistentVolumeSource{
		TargetPortal: "127.0.0.1:3260", IQN: iqn, Lun: 0}})
	unique := corev1.UniqueVolumeName("kubernetes.io/iscsi/127.0.0.1:3260:" + iqn + ":0")
	// The node reports the volume in use before the pod goes, and long
	// enough before that the controller's node cache has it when it
	// decides on the pod's deletion.
	e.setInUse(node, unique)
	e.pod("app", node, "data")

	e.waitReported(node, unique, true)
	e.waitEvent("app", corev1.EventTypeNormal, "SuccessfulAttachVolume",
		fmt.Sprintf(`AttachVolume.Attach succeeded for volume %q `, v.pv))
	if got := e.attachmentsOf(v.pv); len(got) != 0 {
		t.Errorf("attachments of the iscsi PV on %v, want none", got)
	}
	e.forceDelete("app")
	stacktest.Holds(t, "iscsi volume kept while in use", settle, func() string {
		for _, a := range e.volumesAttached(node) {
			if a.Name == unique {
				return ""
			}
		}
		return "left volumesAttached while the node still uses it"
	})
	e.setInUse(node)
	e.waitReported(node, unique, false)
}

// A ReadWriteOnce iscsi volume another node reports attached is not
// reported on a second node: its pod is told of the Multi-Attach error,
// and gets the volume once the first node has let it go.
func TestISCSIVolumeKeepsTheMultiAttachRuleAcrossNodes(t *testing.T) {
	e := newEnv(t)
	first, second := e.nodes[0], e.nodes[1]
	iqn := "iqn.2026-11.io.volplane:" + e.ns
	v := e.boundClaimSource("data", corev1.PersistentVolumeSource{ISCSI: &corev1.ISCSIPersistentVolumeSource{
		TargetPortal: "127.0.0.1:3260", IQN: iqn, Lun: 1}})
	unique := corev1.UniqueVolumeName("kubernetes.io/iscsi/127.0.0.1:3260:" + iqn + ":1")
	e.pod("a", first, "data")
	e.waitReported(first, unique, true)

	e.pod("b", second, "data")
	e.waitEvent("b", corev1.EventTypeWarning, "FailedAttachVolume",
		fmt.Sprintf(`Waiting for detach for volume %q Volume is already used by pod(s) a`, v.pv))
	stacktest.Holds(t, "not reported on a second node", settle, func() string {
		for _, a := range e.volumesAttached(second) {
			if a.Name == unique {
				return "reported on " + second + " too"
			}
		}
		return ""
	})
	e.forceDelete("a")
	e.waitReported(first, unique, false)
	e.waitReported(second, unique, true)
}

// A namespace user's pod may use an inline volume of a migrated plugin, as
// the reference allows; the secret it names is read from the pod's own
// namespace only: every secret reference of the translated spec in the
// attachment is in that namespace, whatever the pod asked for.
func TestInlineMigratedVolumeSecretsStayInThePodNamespace(t *testing.T) {
	e := newEnv(t)
	node := e.nodes[0]
	_, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes: []corev1.Volume{{Name: "share", VolumeSource: corev1.VolumeSource{
				AzureFile: &corev1.AzureFileVolumeSource{SecretName: "kube-system-creds", ShareName: "s-" + e.ns}}}}}},
		metav1.CreateOptions{})
	e.must(err, "create pod")
	var va *storagev1.VolumeAttachment
	e.eventually("inline azureFile attachment made", func() string {
		list, err := e.client.StorageV1().VolumeAttachments().List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for i := range list.Items {
			if s := list.Items[i].Spec.Source.InlineVolumeSpec; s != nil && s.CSI != nil && s.CSI.VolumeAttributes["sharename"] == "s-"+e.ns {
				va = &list.Items[i]
				return ""
			}
		}
		return "none yet"
	})
	csi := va.Spec.Source.InlineVolumeSpec.CSI
	if va.Spec.Attacher != "file.csi.azure.com" || va.Spec.NodeName != node || va.Name != attachment.Name(csi.VolumeHandle, csi.Driver, node) {
		t.Errorf("attachment %s spec %+v is not the reference's", va.Name, va.Spec)
	}
	for _, ref := range []*corev1.SecretReference{csi.ControllerPublishSecretRef, csi.NodeStageSecretRef,
		csi.NodePublishSecretRef, csi.ControllerExpandSecretRef, csi.NodeExpandSecretRef} {
		if ref != nil && ref.Namespace != e.ns {
			t.Errorf("secret %s/%s is outside the pod's namespace %s", ref.Namespace, ref.Name, e.ns)
		}
	}
	if csi.NodeStageSecretRef == nil {
		t.Error("no node-stage secret: the pod's secretName was lost")
	}
	e.forceDelete("app")
	e.waitAttachmentGone(va.Name)
}
