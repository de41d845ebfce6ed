package attachment

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	gcePD  = "pd.csi.storage.gke.io"
	awsEBS = "ebs.csi.aws.com"
)

// inTree turns the CSI PV of claim <name> into one with the given in-tree
// source.
func (w *world) inTree(name string, src v1.PersistentVolumeSource) *v1.PersistentVolume {
	pv := w.volume(name).DeepCopy()
	pv.Spec.PersistentVolumeSource = src
	w.f.Volumes[pv.Name] = pv
	return pv
}

func gceSource(disk string) v1.PersistentVolumeSource {
	return v1.PersistentVolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: disk, FSType: "ext4"}}
}

func iscsiSource(lun int32) v1.PersistentVolumeSource {
	return v1.PersistentVolumeSource{ISCSI: &v1.ISCSIPersistentVolumeSource{
		TargetPortal: "10.0.0.1:3260", IQN: "iqn.2026-11.io.volplane:disk", Lun: lun}}
}

// The reference translates the PV (csi-translation-lib) and attaches it as
// its CSI driver: the attachment is named, attributed and sourced exactly
// as for a CSI PV of that driver and handle.
func TestMigratedPVIsAttachedAsItsCSIDriver(t *testing.T) {
	for name, tc := range map[string]struct {
		src            v1.PersistentVolumeSource
		driver, handle string
	}{
		"gcePersistentDisk": {gceSource("disk-1"), gcePD, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-1"},
		"awsElasticBlockStore": {v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{
			VolumeID: "aws://us-east-1a/vol-0123456789abcdef0"}}, awsEBS, "vol-0123456789abcdef0"},
		"azureDisk": {v1.PersistentVolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{DiskName: "d",
			DataDiskURI: "/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/disks/d"}},
			"disk.csi.azure.com", "/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/disks/d"},
		"cinder": {v1.PersistentVolumeSource{Cinder: &v1.CinderPersistentVolumeSource{VolumeID: "c-1"}}, "cinder.csi.openstack.org", "c-1"},
		"vsphereVolume": {v1.PersistentVolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] v.vmdk"}},
			"csi.vsphere.vmware.com", "[ds] v.vmdk"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld()
			w.inTree("data", tc.src)
			w.pod("app", node, "data")
			p := Decide(w.f)
			if len(p.Create) != 1 {
				t.Fatalf("create %v waits %v, want one attachment", p.Create, reasons(p))
			}
			va := p.Create[0].Attachment
			if va.Name != Name(tc.handle, tc.driver, node) || va.Spec.Attacher != tc.driver || va.Spec.NodeName != node ||
				va.Spec.Source.PersistentVolumeName == nil || *va.Spec.Source.PersistentVolumeName != "pv-data" ||
				va.Spec.Source.InlineVolumeSpec != nil {
				t.Errorf("attachment %+v is not the reference's", va)
			}
			if p.Create[0].Volume != UniqueVolumeName(tc.driver, tc.handle) || !p.Create[0].SingleNode {
				t.Errorf("attach %+v, want volume %s single-node", p.Create[0], UniqueVolumeName(tc.driver, tc.handle))
			}
		})
	}
}

// Once attached, a migrated volume is reported under its CSI unique name
// and the pod told, with the PV's name; without a pod it is detached by
// the same rules.
func TestMigratedPVIsReportedThenDetachedAsACSIVolume(t *testing.T) {
	w := newWorld()
	w.inTree("data", gceSource("disk-1"))
	w.pod("app", node, "data")
	va := Decide(w.f).Create[0].Attachment
	va.Status.Attached = true
	w.f.Attachments = append(w.f.Attachments, va)
	p := Decide(w.f)
	u := UniqueVolumeName(gcePD, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-1")
	if !slices.Equal(p.VolumesAttached, []v1.AttachedVolume{{Name: u}}) || len(p.Events) != 1 ||
		p.Events[0].Message != `AttachVolume.Attach succeeded for volume "pv-data" ` {
		t.Fatalf("attached %v events %+v", p.VolumesAttached, p.Events)
	}
	w.f.Pods = nil
	w.f.Node.VolumesAttached = p.VolumesAttached
	w.f.Node.VolumesInUse = []v1.UniqueVolumeName{u}
	if p := Decide(w.f); len(p.Detach) != 0 || !slices.Equal(reasons(p), []WaitReason{StillMounted}) {
		t.Fatalf("in use: detach %v waits %v", p.Detach, reasons(p))
	}
	w.f.Node.VolumesInUse = nil
	if p := Decide(w.f); len(p.Detach) != 1 || p.Detach[0].Attachment != va || p.Detach[0].Volume != u || len(p.VolumesAttached) != 0 {
		t.Errorf("unused: plan %+v, want %s detached", p, va.Name)
	}
}

// A pod's inline volume of a migrated plugin is attached with the
// translated spec in the attachment (no PV name), as the reference does.
func TestInlineMigratedVolumeIsAttachedWithItsTranslatedSpec(t *testing.T) {
	w := newWorld()
	pod := w.pod("app", node)
	pod.Spec.Volumes = []v1.Volume{{Name: "disk", VolumeSource: v1.VolumeSource{
		GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk-2", ReadOnly: true}}}}
	p := Decide(w.f)
	if len(p.Create) != 1 {
		t.Fatalf("create %v waits %v", p.Create, reasons(p))
	}
	handle := "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-2"
	va := p.Create[0].Attachment
	spec := va.Spec.Source.InlineVolumeSpec
	if va.Name != Name(handle, gcePD, node) || va.Spec.Attacher != gcePD || va.Spec.Source.PersistentVolumeName != nil ||
		spec == nil || spec.CSI == nil || spec.CSI.Driver != gcePD || spec.CSI.VolumeHandle != handle || !spec.CSI.ReadOnly ||
		!slices.Equal(spec.AccessModes, []v1.PersistentVolumeAccessMode{v1.ReadOnlyMany}) {
		t.Fatalf("attachment %+v is not the reference's", va)
	}
	if p.Create[0].SingleNode {
		t.Error("a read-only inline disk is ReadOnlyMany: it may be attached to several nodes")
	}
	va.Status.Attached = true
	w.f.Attachments = []*storagev1.VolumeAttachment{va}
	w.f.Pods = nil
	if p := Decide(w.f); len(p.Detach) != 1 || p.Detach[0].Attachment != va || p.Detach[0].Volume != UniqueVolumeName(gcePD, handle) {
		t.Errorf("no pod: detach %+v, want the inline attachment detached", p.Detach)
	}
}

// An inline volume's secrets come from the pod's namespace only: the
// translation puts the pod's namespace in every secret reference, and the
// pod cannot name another.
func TestInlineVolumeSecretsAreThePodNamespaces(t *testing.T) {
	w := newWorld()
	pod := w.pod("app", node)
	pod.Spec.Volumes = []v1.Volume{{Name: "share", VolumeSource: v1.VolumeSource{
		AzureFile: &v1.AzureFileVolumeSource{SecretName: "other-ns-creds", ShareName: "s"}}}}
	p := Decide(w.f)
	if len(p.Create) != 1 {
		t.Fatalf("create %v waits %v", p.Create, reasons(p))
	}
	csi := p.Create[0].Attachment.Spec.Source.InlineVolumeSpec.CSI
	for _, ref := range []*v1.SecretReference{csi.ControllerPublishSecretRef, csi.NodeStageSecretRef,
		csi.NodePublishSecretRef, csi.ControllerExpandSecretRef, csi.NodeExpandSecretRef} {
		if ref != nil && ref.Namespace != pod.Namespace {
			t.Errorf("secret %s/%s is outside the pod's namespace %s", ref.Namespace, ref.Name, pod.Namespace)
		}
	}
}

func TestUntranslatableMigratedPVWaitsWithTheTranslationError(t *testing.T) {
	w := newWorld()
	w.inTree("data", v1.PersistentVolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://zone/not-a-volume"}})
	w.pod("app", node, "data")
	p := Decide(w.f)
	if len(p.Create) != 0 || !slices.Equal(reasons(p), []WaitReason{TranslationFailed}) {
		t.Errorf("create %v waits %v, want a TranslationFailed wait", p.Create, reasons(p))
	}
}

// iscsi (and fc) attach on the controller's side does nothing: the volume
// is reported attached at once, the pods told, and no attachment is made.
func TestISCSIVolumeIsReportedAttachedAtOnceWithNoAttachment(t *testing.T) {
	w := newWorld()
	w.inTree("data", iscsiSource(3))
	w.pod("app", node, "data")
	p := Decide(w.f)
	u := v1.UniqueVolumeName("kubernetes.io/iscsi/10.0.0.1:3260:iqn.2026-11.io.volplane:disk:3")
	if len(p.Create) != 0 || !slices.Equal(p.VolumesAttached, []v1.AttachedVolume{{Name: u}}) || !p.StatusChanged {
		t.Fatalf("create %v attached %v changed %v", p.Create, p.VolumesAttached, p.StatusChanged)
	}
	if len(p.Events) != 1 || p.Events[0].Reason != SuccessfulAttachVolume || p.Events[0].Type != v1.EventTypeNormal ||
		p.Events[0].Message != `AttachVolume.Attach succeeded for volume "pv-data" ` {
		t.Errorf("events %+v", p.Events)
	}
	if desired, attached, _ := p.Counts.Sum(); desired[ISCSIPluginName] != 1 || attached[ISCSIPluginName] != 1 {
		t.Errorf("counts %+v", p.Counts)
	}
	w.f.Node.VolumesAttached = p.VolumesAttached
	if p := Decide(w.f); p.StatusChanged || len(p.Events) != 0 {
		t.Errorf("once reported: changed %v events %v", p.StatusChanged, p.Events)
	}
}

// Detaching an in-tree volume is leaving volumesAttached, under the
// reference's rules: not while the node uses it (unless forced).
func TestISCSIVolumeLeavesVolumesAttachedByTheDetachRules(t *testing.T) {
	u := v1.UniqueVolumeName("kubernetes.io/iscsi/10.0.0.1:3260:iqn.2026-11.io.volplane:disk:0")
	w := newWorld()
	w.f.Node.VolumesAttached = []v1.AttachedVolume{{Name: u}, {Name: "example.com/flex/other"}}
	w.f.Node.VolumesInUse = []v1.UniqueVolumeName{u}
	p := Decide(w.f)
	if !slices.Equal(p.VolumesAttached, []v1.AttachedVolume{{Name: u}}) || !slices.Equal(reasons(p), []WaitReason{StillMounted}) ||
		len(p.Detach) != 0 || p.RequeueAfter <= 0 {
		t.Fatalf("in use: attached %v waits %v detach %v", p.VolumesAttached, reasons(p), p.Detach)
	}
	if _, ok := p.UndesiredSince[string(u)]; !ok {
		t.Errorf("no unmount timer for %s: %v", u, p.UndesiredSince)
	}
	w.f.Node.OutOfService = true
	p = Decide(w.f)
	if len(p.VolumesAttached) != 0 || len(p.Detach) != 1 || p.Detach[0].Attachment != nil || p.Detach[0].Reason != OutOfService {
		t.Fatalf("out of service: attached %v detach %+v", p.VolumesAttached, p.Detach)
	}
	w.f.Node.OutOfService, w.f.Node.VolumesInUse = false, nil
	if p := Decide(w.f); len(p.VolumesAttached) != 0 || len(p.Detach) != 1 || p.Detach[0].Reason != NotInUse {
		t.Errorf("unused: attached %v detach %+v", p.VolumesAttached, p.Detach)
	}
}

// A single-node in-tree volume another node reports attached waits with a
// Multi-Attach error; one that allows several nodes, or that this node
// already holds, does not.
func TestISCSIVolumeHeldByAnotherNodeKeepsTheMultiAttachRule(t *testing.T) {
	u := v1.UniqueVolumeName("kubernetes.io/iscsi/10.0.0.1:3260:iqn.2026-11.io.volplane:disk:0")
	w := newWorld()
	w.inTree("data", iscsiSource(0))
	w.pod("app", node, "data")
	w.f.InTreeElsewhere = map[v1.UniqueVolumeName][]string{u: {"node-2"}}
	p := Decide(w.f)
	if len(p.VolumesAttached) != 0 || !slices.Equal(reasons(p), []WaitReason{MultiAttach}) || len(p.Events) != 1 ||
		p.Events[0].Reason != FailedAttachVolume {
		t.Fatalf("ReadWriteOnce elsewhere: attached %v waits %v events %+v", p.VolumesAttached, reasons(p), p.Events)
	}
	w.f.Node.VolumesAttached = []v1.AttachedVolume{{Name: u}}
	if p := Decide(w.f); !slices.Equal(p.VolumesAttached, []v1.AttachedVolume{{Name: u}}) || len(p.Wait) != 0 {
		t.Errorf("already held here: attached %v waits %v", p.VolumesAttached, reasons(p))
	}
	w.f.Node.VolumesAttached = nil
	w.f.Volumes["pv-data"].Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadOnlyMany}
	if p := Decide(w.f); len(p.VolumesAttached) != 1 || len(p.Wait) != 0 {
		t.Errorf("ReadOnlyMany: attached %v waits %v", p.VolumesAttached, reasons(p))
	}
}

func TestInTreeUniqueNamesAreTheReferencePluginsGetVolumeName(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for _, tc := range []struct {
		src  v1.VolumeSource
		want v1.UniqueVolumeName
	}{
		{v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{TargetPortal: "t:3260", IQN: "iqn.x", Lun: 1}}, "kubernetes.io/iscsi/t:3260:iqn.x:1"},
		{v1.VolumeSource{FC: &v1.FCVolumeSource{TargetWWNs: []string{"a", "b"}, Lun: ptr.To[int32](2)}}, "kubernetes.io/fc/[a b]:2"},
		{v1.VolumeSource{FC: &v1.FCVolumeSource{WWIDs: []string{"w1", "w2"}}}, "kubernetes.io/fc/[w1 w2]"},
	} {
		v, ok, err := FromInline(pod, &v1.Volume{Name: "vol", VolumeSource: tc.src})
		if !ok || err != nil || v.Kind != KindInTree || v.Unique != tc.want || v.Name != "vol" {
			t.Errorf("%+v: got %+v %v %v, want %s", tc.src, v, ok, err, tc.want)
		}
	}
	for _, src := range []v1.VolumeSource{{NFS: &v1.NFSVolumeSource{}}, {HostPath: &v1.HostPathVolumeSource{}}, {CSI: &v1.CSIVolumeSource{Driver: "d"}}} {
		if _, ok, _ := FromInline(pod, &v1.Volume{VolumeSource: src}); ok {
			t.Errorf("%+v is not attached by the controller", src)
		}
	}
}
