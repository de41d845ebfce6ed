package attachment

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// FuzzInlineVolume feeds Decide a pod (a namespace user's) whose inline
// volume is an in-tree source of any kind with any names: whatever it
// says, nothing panics, an attachment made for it never names a
// PersistentVolume (a pod cannot reach a PV but through its claim), is the
// reference's (named after its translated handle and driver), and every
// secret its spec names is in the pod's namespace.
func FuzzInlineVolume(f *testing.F) {
	f.Add("disk", "ns", "secret", uint8(0))
	f.Add("vol-0123", "ns", "", uint8(1))
	f.Add("share", "kube-system", "azure-storage-account-x-secret", uint8(2))
	f.Add("iqn.x", "ns", "chap", uint8(3))
	f.Add("[ds] a.vmdk", "ns", "", uint8(4))
	f.Add("px-1", "ns", "", uint8(5))
	f.Fuzz(func(t *testing.T, name, namespace, secret string, kind uint8) {
		w := newWorld()
		pod := w.pod("app", node)
		pod.Namespace = namespace
		pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: inlineSource(name, secret, kind)}}
		p := Decide(w.f)
		for _, c := range p.Create {
			va := c.Attachment
			spec := va.Spec.Source.InlineVolumeSpec
			if va.Spec.Source.PersistentVolumeName != nil || spec == nil || spec.CSI == nil {
				t.Fatalf("attachment source %+v: an inline volume's must be its translated spec", va.Spec.Source)
			}
			if va.Name != Name(spec.CSI.VolumeHandle, spec.CSI.Driver, node) || va.Spec.Attacher != spec.CSI.Driver {
				t.Errorf("attachment %s of %s is not named after its handle and driver", va.Name, va.Spec.Attacher)
			}
			for _, ref := range []*v1.SecretReference{spec.CSI.ControllerPublishSecretRef, spec.CSI.NodeStageSecretRef,
				spec.CSI.NodePublishSecretRef, spec.CSI.ControllerExpandSecretRef, spec.CSI.NodeExpandSecretRef} {
				if ref != nil && namespace != "" && ref.Namespace != namespace {
					t.Errorf("secret %s/%s outside the pod's namespace %q", ref.Namespace, ref.Name, namespace)
				}
			}
		}
	})
}

func inlineSource(name, secret string, kind uint8) v1.VolumeSource {
	switch kind % 7 {
	case 0:
		return v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: name}}
	case 1:
		return v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: name}}
	case 2:
		return v1.VolumeSource{AzureFile: &v1.AzureFileVolumeSource{ShareName: name, SecretName: secret}}
	case 3:
		return v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{TargetPortal: name, IQN: secret, SecretRef: &v1.LocalObjectReference{Name: secret}}}
	case 4:
		return v1.VolumeSource{VsphereVolume: &v1.VsphereVirtualDiskVolumeSource{VolumePath: name}}
	case 5:
		return v1.VolumeSource{PortworxVolume: &v1.PortworxVolumeSource{VolumeID: name}}
	}
	return v1.VolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{DiskName: name, DataDiskURI: secret}}
}
