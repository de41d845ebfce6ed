package mounting

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
)

func TestCapabilityIsTheKubelets(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	rwo, rwop := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	for _, tc := range []struct {
		modes []corev1.PersistentVolumeAccessMode
		block bool
		// snmw: the node service has SINGLE_NODE_MULTI_WRITER.
		snmw bool
		want csipb.VolumeCapability_AccessMode_Mode
	}{
		{nil, false, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{rwo, false, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{rwo, false, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{nil, false, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteOnce}, false, true, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, true, false, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{rwop, false, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{rwop, false, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
	} {
		pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{AccessModes: tc.modes, MountOptions: []string{"noatime"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{FSType: "ext4"}}}}
		if tc.block {
			pv.Spec.VolumeMode = &block
		}
		c := Capability(pv, tc.snmw)
		if c.GetAccessMode().GetMode() != tc.want {
			t.Errorf("%v (SINGLE_NODE_MULTI_WRITER %v): mode %v, want %v", tc.modes, tc.snmw, c.GetAccessMode().GetMode(), tc.want)
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
			p := tc.w.Pods[0]
			stage, pub, exp := l.StageRequest(tc.w, p, v), l.PublishRequest(tc.w, p, v), l.ExpandRequest(tc.w, p, v, 42)
			staging := l.StagingPath(v.Driver, v.Handle)
			if stage.StagingTargetPath != staging || pub.TargetPath != l.TargetPath(podUID, "pv-1") || exp.VolumePath != pub.TargetPath {
				t.Errorf("paths: stage %q, publish %q, expand %q", stage.StagingTargetPath, pub.TargetPath, exp.VolumePath)
			}
			// The kubelet gives NodeExpandVolume the staging path even
			// to a driver that does not stage.
			if (pub.StagingTargetPath == staging) != tc.stages || exp.StagingTargetPath != staging {
				t.Errorf("staging path %q/%q given: want %v for publish, always for expand", pub.StagingTargetPath, exp.StagingTargetPath, tc.stages)
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
	if s.Done || p.Done || s.Size != "1Gi" || p.Mode != "Persistent" || p.Node != node || p.PV != "pv-1" {
		t.Errorf("staging %+v, publication %+v: want not done, the claim's size staged, a persistent publication", s, p)
	}
	// The kubelet's staging vol_data.json (next to globalmount) holds
	// driverName and volumeHandle; the agent adds only its own keys.
	raw, _ := json.Marshal(s)
	var keys map[string]any
	_ = json.Unmarshal(raw, &keys)
	for k := range keys {
		if k != "driverName" && k != "volumeHandle" && !strings.HasPrefix(k, "volplane") {
			t.Errorf("staging record %s has the key %s, not the kubelet's", raw, k)
		}
	}
	// The kubelet names the attachment in every publication record, of an
	// attachable volume or not.
	if want := attachment.Name("h-1", local, node); p.AttachmentID != want {
		t.Errorf("publication attachmentID %q, want %q", p.AttachmentID, want)
	}
}

// A CSIDriver with podInfoOnMount has the pod's identity in the publish
// volume context (never in the PV's own map), and a node service with
// VOLUME_MOUNT_GROUP gets the pod's fsGroup in stage and publish.
func TestPodInfoAndMountGroupAreTheKubelets(t *testing.T) {
	l := Layout{Root: "/root"}
	p := pod(podUID, "data")
	p.Spec.ServiceAccountName = "sa"
	p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
	for _, tc := range []struct {
		name           string
		podInfo, group bool
	}{{"neither", false, false}, {"pod info", true, false}, {"mount group", false, true}, {"both", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := world(local, withPods(p), func(w *World) {
				w.CSIDrivers[local].Spec.PodInfoOnMount = ptr.To(tc.podInfo)
				w.Drivers[local] = Driver{Stage: true, MountGroup: tc.group}
				w.Volumes["pv-1"].Spec.CSI.VolumeAttributes = map[string]string{"a": "b"}
			})
			v := Decide(w).Pods[0].Steps[0].Volume
			stage, pub := l.StageRequest(w, p, v), l.PublishRequest(w, p, v)
			want := map[string]string{"a": "b"}
			if tc.podInfo {
				want = map[string]string{"a": "b", PodNameKey: p.Name, PodNamespaceKey: "ns", PodUIDKey: string(podUID),
					ServiceAccountNameKey: "sa", EphemeralKey: "false"}
			}
			if !maps.Equal(pub.VolumeContext, want) || !maps.Equal(stage.VolumeContext, map[string]string{"a": "b"}) {
				t.Errorf("volume context: publish %v, stage %v; want %v and the PV's", pub.VolumeContext, stage.VolumeContext, want)
			}
			if len(v.PV.Spec.CSI.VolumeAttributes) != 1 {
				t.Errorf("the PV's attributes were changed: %v", v.PV.Spec.CSI.VolumeAttributes)
			}
			group := ""
			if tc.group {
				group = "2000"
			}
			if g1, g2 := stage.VolumeCapability.GetMount().GetVolumeMountGroup(), pub.VolumeCapability.GetMount().GetVolumeMountGroup(); g1 != group || g2 != group {
				t.Errorf("volume mount group: stage %q, publish %q; want %q", g1, g2, group)
			}
		})
	}
}

// A block volume has the kubelet's block mapper paths and texts: staged at
// volumeDevices/staging/<pv>, published at volumeDevices/publish/<pv>/<uid>
// with the staging path even for a driver that does not stage, expanded on
// the publish path, and MapVolume events.
func TestBlockVolumeHasTheBlockMappersPathsAndTexts(t *testing.T) {
	l := Layout{Root: "/root"}
	block := corev1.PersistentVolumeBlock
	p := pod(podUID, "data")
	w := world(local, withPods(p), func(w *World) {
		w.Volumes["pv-1"].Spec.VolumeMode = &block
		w.Drivers[local] = Driver{}
	})
	v := Decide(w).Pods[0].Steps[0].Volume
	staging, target := "/root/plugins/kubernetes.io/csi/volumeDevices/staging/pv-1", "/root/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/"+string(podUID)
	if !v.Block || l.StageRequest(w, p, v).StagingTargetPath != staging {
		t.Errorf("block %v, staging %q", v.Block, l.StageRequest(w, p, v).StagingTargetPath)
	}
	pub, exp := l.PublishRequest(w, p, v), l.ExpandRequest(w, p, v, 1)
	if pub.TargetPath != target || pub.StagingTargetPath != staging || exp.VolumePath != target || exp.StagingTargetPath != staging {
		t.Errorf("publish %q from %q, expand %q from %q", pub.TargetPath, pub.StagingTargetPath, exp.VolumePath, exp.StagingTargetPath)
	}
	if dir, _ := l.StagePaths(true, local, "h-1", "pv-1"); dir != "/root/plugins/kubernetes.io/csi/volumeDevices/pv-1/data" {
		t.Errorf("block record dir %q", dir)
	}
	err := errors.New("boom")
	if got := OpFailedMessage(OpStage, v, err); got != `MapVolume.SetUpDevice failed for volume "pv-1" : boom` {
		t.Errorf("stage failure %q", got)
	}
	if got := OpFailedMessage(OpPublish, v, err); got != `MapVolume.MapPodDevice failed for volume "pv-1" : boom` {
		t.Errorf("publish failure %q", got)
	}
}
