package checkup

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volplane/volplane/internal/doctor"
)

func releasedVolume() *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "old"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			ClaimRef: &v1.ObjectReference{Namespace: "ns", Name: "data", UID: "uid-1"}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeReleased}}
}

// conflictOnce fails the first update of a volume with a conflict, after
// running meanwhile (a concurrent writer's change) on the stored volume.
func conflictOnce(client *fake.Clientset, meanwhile func(*v1.PersistentVolume)) *int {
	updates := 0
	client.PrependReactor("update", "persistentvolumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		if updates > 1 {
			return false, nil, nil
		}
		pv, _ := client.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, "", "old")
		changed := pv.(*v1.PersistentVolume).DeepCopy()
		meanwhile(changed)
		_ = client.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, changed, "")
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "persistentvolumes"}, "old", errors.New("changed"))
	})
	return &updates
}

func TestReleaseReadsAndDecidesAgainAfterAConflict(t *testing.T) {
	client := fake.NewClientset(releasedVolume())
	updates := conflictOnce(client, func(pv *v1.PersistentVolume) { pv.Labels = map[string]string{"touched": "yes"} })
	var out bytes.Buffer
	if err := Release(context.Background(), client, ReleaseConfig{Name: "old"}, &out); err != nil {
		t.Fatal(err)
	}
	pv, _ := client.CoreV1().PersistentVolumes().Get(context.Background(), "old", metav1.GetOptions{})
	if *updates != 2 || pv.Spec.ClaimRef != nil || pv.Labels["touched"] != "yes" {
		t.Fatalf("updates %d, claimRef %v, labels %v", *updates, pv.Spec.ClaimRef, pv.Labels)
	}
	if !strings.Contains(out.String(), "nothing marked persistentvolume old Available") {
		t.Errorf("said %q", out.String())
	}
}

func TestReleaseRefusesWhenAConcurrentChangeMadeItUnreleasable(t *testing.T) {
	client := fake.NewClientset(releasedVolume())
	conflictOnce(client, func(pv *v1.PersistentVolume) {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "other", UID: "uid-2"}
		pv.Status.Phase = v1.VolumeBound
	})
	err := Release(context.Background(), client, ReleaseConfig{Name: "old"}, &bytes.Buffer{})
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Decision.Refusal != doctor.RefuseNotReleased {
		t.Fatalf("got %v, want a not-released refusal", err)
	}
}
