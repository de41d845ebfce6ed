package informerindex

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/volplane/volplane/internal/attachment"
)

// Asking twice registers once, and every lookup reads its index.
func TestIndexesAreRegisteredOnceAndRead(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	pods, err := Pods(f)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Pods(f); err != nil || again.GetIndexer() != pods.GetIndexer() {
		t.Fatalf("second ask: %v, %v", again, err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{NodeName: "n1",
		Volumes: []v1.Volume{
			{Name: "a", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "e", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
		}}}
	if err := pods.GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ns/data", "ns/p-e"} {
		if got, err := PodsUsing(pods.GetIndexer(), key); err != nil || len(got) != 1 {
			t.Errorf("PodsUsing(%s) = %v, %v", key, got, err)
		}
	}
	if got, err := PodsOn(pods.GetIndexer(), "n1"); err != nil || len(got) != 1 {
		t.Errorf("PodsOn = %v, %v", got, err)
	}

	vas, err := VolumeAttachments(f)
	if err != nil {
		t.Fatal(err)
	}
	pvName := "pv1"
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va"},
		Spec: storagev1.VolumeAttachmentSpec{NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}}}
	if err := vas.GetIndexer().Add(va); err != nil {
		t.Fatal(err)
	}
	if got, err := AttachmentsOn(vas.GetIndexer(), "n1"); err != nil || len(got) != 1 {
		t.Errorf("AttachmentsOn = %v, %v", got, err)
	}
	if got, err := AttachmentsOf(vas.GetIndexer(), pvName); err != nil || len(got) != 1 {
		t.Errorf("AttachmentsOf = %v, %v", got, err)
	}

	pvs, err := PersistentVolumes(f)
	if err != nil {
		t.Fatal(err)
	}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	if err := pvs.GetIndexer().Add(pv); err != nil {
		t.Fatal(err)
	}
	if got, err := PVsOf(pvs.GetIndexer(), attachment.UniqueVolumeName("d", "h")); err != nil || len(got) != 1 {
		t.Errorf("PVsOf = %v, %v", got, err)
	}
}

// An indexer that was not asked for through this package says so.
func TestLookupOnAnUnindexedInformerFails(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	if _, err := PodsUsing(f.Core().V1().Pods().Informer().GetIndexer(), "ns/c"); err == nil {
		t.Error("no error without the index")
	}
}
