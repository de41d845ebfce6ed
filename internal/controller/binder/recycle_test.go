package binder

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

// releasedRecycleVolume is a hostPath PV with policy Recycle, Released by
// claim ns/c (gone); recorded is the recycler pod UID on it ("" for none).
func releasedRecycleVolume(recorded string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv1", UID: "pv1-uid", ResourceVersion: "1",
			Annotations: map[string]string{storagehelpers.AnnBoundByController: "yes"}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRecycle,
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp/pv1"}},
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "c", UID: "claim-uid"},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeReleased},
	}
	if recorded != "" {
		pv.Annotations[binding.AnnRecyclerPod] = recorded
	}
	return pv
}

// podNamedRecycler is a pod under the recycler's name in the recycler
// namespace, already Succeeded.
func podNamedRecycler(uid types.UID, annotations map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "recycler-for-pv1", Namespace: "default", UID: uid,
			ResourceVersion: "1", CreationTimestamp: metav1.Now(), Annotations: annotations},
		Status: v1.PodStatus{Phase: v1.PodSucceeded},
	}
}

func (b *fakeBinder) apiVolume(t *testing.T) *v1.PersistentVolume {
	t.Helper()
	pv, err := b.client.CoreV1().PersistentVolumes().Get(ctx, "pv1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

func (b *fakeBinder) apiRecyclerPod(t *testing.T) *v1.Pod {
	t.Helper()
	pods, err := b.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) > 1 {
		t.Fatalf("%d recycler pods, want at most one", len(pods.Items))
	}
	if len(pods.Items) == 0 {
		return nil
	}
	return &pods.Items[0]
}

func (b *fakeBinder) syncVolumeOK(t *testing.T) {
	t.Helper()
	if _, err := b.syncVolume(ctx, "pv1"); err != nil {
		t.Fatalf("sync volume: %v", err)
	}
}

func (b *fakeBinder) wantEvent(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-b.recorder.Events:
		if got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	default:
		t.Errorf("no event, want %q", want)
	}
}

func (b *fakeBinder) stillReleased(t *testing.T, when string) {
	t.Helper()
	if pv := b.apiVolume(t); pv.Status.Phase != v1.VolumeReleased || pv.Spec.ClaimRef == nil {
		t.Fatalf("%s: PV %s with claimRef %v, want Released and still claimed", when, pv.Status.Phase, pv.Spec.ClaimRef)
	}
}

// A Succeeded pod under the recycler's name that volplane did not create
// for this release (a user's, or one left from an earlier scrub) proves
// nothing: it is deleted, our own scrub pod is created, and the volume is
// Available only once that pod succeeds. Matches the reference's recycler
// client, which deletes any pod it finds under that name.
func TestLeftoverRecyclerPodIsReplacedBeforeTheVolumeIsFreed(t *testing.T) {
	pv := releasedRecycleVolume("")
	foreign := podNamedRecycler("someone-elses", nil)
	b := newFakeBinder(t, pv, foreign)

	b.syncVolumeOK(t)
	if got := b.apiRecyclerPod(t); got != nil {
		t.Fatalf("the foreign pod (uid %s) is still there", got.UID)
	}
	b.wantEvent(t, "Warning VolumeFailedRecycle Recycle failed: old recycler pod found, will retry later")
	b.stillReleased(t, "after removing the foreign pod")

	b.informerDeletes(t, foreign)
	b.syncVolumeOK(t)
	ours := b.apiRecyclerPod(t)
	if ours == nil || ours.UID == foreign.UID {
		t.Fatalf("no scrub pod of our own created (found %v)", ours)
	}
	if got := b.apiVolume(t).Annotations[binding.AnnRecyclerPod]; got != string(ours.UID) {
		t.Errorf("PV records recycler pod %q, want %q", got, ours.UID)
	}
	b.stillReleased(t, "while our scrub pod runs")

	// The informer has not delivered our pod yet: the binder reads it live
	// and waits, rather than creating a second one or deleting it.
	creates := countActions(b, "create", "pods")
	b.syncVolumeOK(t)
	if now := b.apiRecyclerPod(t); now == nil || now.UID != ours.UID || countActions(b, "create", "pods") != creates {
		t.Fatalf("our running pod was replaced (now %v)", now)
	}
	b.stillReleased(t, "while our scrub pod runs")

	ours.Status.Phase = v1.PodSucceeded
	if _, err := b.client.CoreV1().Pods("default").UpdateStatus(ctx, ours, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.informerAdds(t, ours)
	b.syncVolumeOK(t)
	got := b.apiVolume(t)
	if got.Status.Phase != v1.VolumeAvailable || got.Spec.ClaimRef != nil {
		t.Errorf("after our scrub: PV %s claimRef %v, want Available and free", got.Status.Phase, got.Spec.ClaimRef)
	}
	if _, recorded := got.Annotations[binding.AnnRecyclerPod]; recorded {
		t.Error("the record of the finished scrub stayed on the PV")
	}
	if pod := b.apiRecyclerPod(t); pod != nil {
		t.Errorf("our finished recycler pod was not removed")
	}
	b.wantEvent(t, "Normal VolumeRecycled Volume recycled")
}

// The pod recorded on the volume is ours across a restart of the binder: a
// new binder finishes the scrub with it instead of scrubbing again.
func TestRecordedRecyclerPodIsTrustedAfterARestart(t *testing.T) {
	pv := releasedRecycleVolume("ours")
	pod := podNamedRecycler("ours", map[string]string{binding.AnnRecycledClaim: "claim-uid"})
	b := newFakeBinder(t, pv, pod)

	b.syncVolumeOK(t)
	if n := countActions(b, "create", "pods"); n != 0 {
		t.Errorf("%d scrub pods created, want none: ours had already succeeded", n)
	}
	if got := b.apiVolume(t); got.Status.Phase != v1.VolumeAvailable {
		t.Errorf("PV %s, want Available", got.Status.Phase)
	}
	b.wantEvent(t, "Normal VolumeRecycled Volume recycled")
}

// Our own pod from an earlier release of the same volume (its delete
// failed, say) does not vouch for the data of a later claim.
func TestRecyclerPodOfAnEarlierReleaseIsNotTrusted(t *testing.T) {
	pv := releasedRecycleVolume("ours")
	pod := podNamedRecycler("ours", map[string]string{binding.AnnRecycledClaim: "an-earlier-claim"})
	b := newFakeBinder(t, pv, pod)

	b.syncVolumeOK(t)
	b.stillReleased(t, "with only an earlier release's pod")
	if got := b.apiRecyclerPod(t); got != nil {
		t.Errorf("the earlier release's pod is still there")
	}
}

func countActions(b *fakeBinder, verb, resource string) int {
	n := 0
	for _, a := range b.client.Actions() {
		if a.Matches(verb, resource) {
			n++
		}
	}
	return n
}
