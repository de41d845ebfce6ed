package mounting

import (
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
)

func TestCapabilityIsTheKubelets(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	for _, tc := range []struct {
		modes []corev1.PersistentVolumeAccessMode
		block bool
		want  csipb.VolumeCapability_AccessMode_Mode
	}{
		{nil, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteOnce}, false, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, true, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
	} {
		pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{AccessModes: tc.modes, MountOptions: []string{"noatime"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{FSType: "ext4"}}}}
		if tc.block {
			pv.Spec.VolumeMode = &block
		}
		c := Capability(pv)
		if c.GetAccessMode().GetMode() != tc.want {
			t.Errorf("%v: mode %v, want %v", tc.modes, c.GetAccessMode().GetMode(), tc.want)
		}
		switch {
		case tc.block && c.GetBlock() == nil:
			t.Errorf("%v: want a block capability", tc.modes)
		case !tc.block && (c.GetMount().GetFsType() != "ext4" || len(c.GetMount().GetMountFlags()) != 1):
			t.Errorf("%v: mount %v, want ext4 with the PV's mount options", tc.modes, c.GetMount())
		}
	}
}

// The node requests carry the attachment's publish context and the
// staging path only where they apply.
func TestRequestsFollowTheDriverAndTheAttachment(t *testing.T) {
	l := Layout{Root: "/root"}
	for _, tc := range []struct {
		name        string
		w           World
		stages      bool
		wantContext bool
	}{
		{"local, staging", world(local, withPods(pod(podUID, "data"))), true, false},
		{"local, no staging", world(local, withPods(pod(podUID, "data")), func(w *World) { w.Drivers[local] = Driver{} }), false, false},
		{"attached", world(network, withPods(pod(podUID, "data")), attachedAndReported, func(w *World) {
			for _, va := range w.Attachments {
				va.Status.AttachmentMetadata = map[string]string{"device": "/dev/x"}
			}
		}), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.w).Pods[0].Steps[0].Volume
			stage, pub, exp := l.StageRequest(tc.w, v), l.PublishRequest(tc.w, podUID, v), l.ExpandRequest(tc.w, podUID, v, 42)
			staging := l.StagingPath(v.Driver, v.Handle)
			if stage.StagingTargetPath != staging || pub.TargetPath != l.TargetPath(podUID, "pv-1") || exp.VolumePath != pub.TargetPath {
				t.Errorf("paths: stage %q, publish %q, expand %q", stage.StagingTargetPath, pub.TargetPath, exp.VolumePath)
			}
			if (pub.StagingTargetPath == staging) != tc.stages || (exp.StagingTargetPath == staging) != tc.stages {
				t.Errorf("staging path %q/%q given: want %v", pub.StagingTargetPath, exp.StagingTargetPath, tc.stages)
			}
			if (pub.PublishContext["device"] != "") != tc.wantContext || (stage.PublishContext["device"] != "") != tc.wantContext {
				t.Errorf("publish context %v: want the attachment's: %v", pub.PublishContext, tc.wantContext)
			}
			if exp.CapacityRange.RequiredBytes != 42 {
				t.Errorf("expand to %d, want 42", exp.CapacityRange.RequiredBytes)
			}
		})
	}
}

func TestRecordsStartNotDone(t *testing.T) {
	w := world(local, withPods(pod(podUID, "data")), grown("2Gi", "1Gi", ""))
	v := Decide(w).Pods[0].Steps[0].Volume
	s, p := StagingRecord(node, v), PublicationRecord(node, v)
	if s.Done || p.Done || s.Size != "1Gi" || p.Mode != "Persistent" || s.Node != node {
		t.Errorf("staging %+v, publication %+v: want not done, the claim's size staged, a persistent publication", s, p)
	}
}
