package checkup

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/doctor"
)

// releasedCSIVolume is a Released Retain CSI volume of the old claim ns/data.
func releasedCSIVolume() *v1.PersistentVolume {
	pv := releasedVolume()
	pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: "hostpath.csi.volplane.io", VolumeHandle: "vol-1"}
	return pv
}

// Release refuses, and writes nothing, while anything attaches, mounts or
// names the volume.
func TestReleaseRefusesWhileAnythingReachesTheVolume(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		refusal doctor.Refusal
	}{
		{"a VolumeAttachment attaches it", []runtime.Object{&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-1"},
			Spec: storagev1.VolumeAttachmentSpec{NodeName: "n1", Attacher: "hostpath.csi.volplane.io",
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("old")}}}}, doctor.RefuseAttached},
		{"its node reports it in use", []runtime.Object{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Status: v1.NodeStatus{VolumesInUse: []v1.UniqueVolumeName{attachment.UniqueVolumeName("hostpath.csi.volplane.io", "vol-1")}}}}, doctor.RefuseMounted},
		{"a pod still names the old claim", []runtime.Object{&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
			Spec: v1.PodSpec{NodeName: "n1", Volumes: []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}},
			Status: v1.PodStatus{Phase: v1.PodRunning}}}, doctor.RefuseNamedByPod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(append(tc.objects, releasedCSIVolume())...)
			err := Release(context.Background(), client, ReleaseConfig{Name: "old", Wait: time.Millisecond}, &bytes.Buffer{})
			var refused *RefusedError
			if !errors.As(err, &refused) || refused.Decision.Refusal != tc.refusal {
				t.Fatalf("got %v, want refusal %s", err, tc.refusal)
			}
			pv, _ := client.CoreV1().PersistentVolumes().Get(context.Background(), "old", metav1.GetOptions{})
			if pv.Spec.ClaimRef == nil {
				t.Errorf("refused, yet the claimRef was cleared")
			}
		})
	}
}

func TestReleaseToOneClaimPreBindsTheVolumeToIt(t *testing.T) {
	heir := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "heir", UID: "uid-heir"}}
	client := fake.NewClientset(releasedCSIVolume(), heir)
	var out bytes.Buffer
	cfg := ReleaseConfig{Name: "old", To: types.NamespacedName{Namespace: "other", Name: "heir"}, Wait: time.Millisecond}
	if err := Release(context.Background(), client, cfg, &out); err != nil {
		t.Fatal(err)
	}
	pv, _ := client.CoreV1().PersistentVolumes().Get(context.Background(), "old", metav1.GetOptions{})
	want := v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "other", Name: "heir", UID: "uid-heir"}
	if pv.Spec.ClaimRef == nil || *pv.Spec.ClaimRef != want {
		t.Fatalf("claimRef %+v, want %+v", pv.Spec.ClaimRef, want)
	}
	if !strings.Contains(out.String(), "pre-bound to claim other/heir (uid uid-heir)") ||
		!strings.Contains(out.String(), "nothing bound persistentvolume old to claim other/heir") {
		t.Errorf("said %q", out.String())
	}
}
