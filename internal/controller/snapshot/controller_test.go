package snapshot

import (
	"context"
	"slices"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// One sync of a new dynamic snapshot writes in doc.go's order: the
// snapshot's class and finalizers, the claim's finalizer, the content,
// the status; and records CreatingSnapshot.
func TestDynamicSnapshotWriteOrder(t *testing.T) {
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "c1"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: "c1"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	class := &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{snapshotapi.DefaultClassAnnotation: "true"}},
		Driver: "d", DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "snap", UID: "u1"},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}}}
	client := fake.NewClientset(claim, pv)
	snaps := snapfake.NewSimpleClientset(class, vs)
	rec := record.NewFakeRecorder(10)
	syncOnce(t, client, snaps, rec, claim, pv, class, vs)
	var writes []string
	for _, a := range snaps.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			writes = append(writes, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
	}
	want := []string{"update volumesnapshots/", "create volumesnapshotcontents/", "update volumesnapshots/status"}
	if len(writes) != len(want) {
		t.Fatalf("snapshot API writes %v, want %v", writes, want)
	}
	for i := range want {
		if writes[i] != want[i] {
			t.Errorf("write %d: %s, want %s", i, writes[i], want[i])
		}
	}
	var claimUpdate k8stesting.UpdateAction
	for _, a := range client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok {
			claimUpdate = u
		}
	}
	if claimUpdate == nil || !hasString(claimUpdate.GetObject().(*corev1.PersistentVolumeClaim).Finalizers, snapshotapi.ClaimFinalizer) {
		t.Errorf("claim not protected: %v", client.Actions())
	}
	got, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, "snapcontent-u1", metav1.GetOptions{})
	if err != nil || *got.Spec.Source.VolumeHandle != "h" || got.Spec.VolumeSnapshotRef.UID != "u1" {
		t.Errorf("content %+v, %v", got, err)
	}
	select {
	case e := <-rec.Events:
		if e != "Normal CreatingSnapshot Waiting for a snapshot ns/snap to be created by the CSI driver." {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event")
	}
}

// syncOnce builds the loop over the fakes, fills its caches by hand with
// objs (the fake snapshot clientset's watch is not needed for one sync)
// and syncs the snapshot ns/snap once.
func syncOnce(t *testing.T, client *fake.Clientset, snaps *snapfake.Clientset, rec record.EventRecorder, objs ...runtime.Object) {
	t.Helper()
	c := cachedOver(t, client, snaps, rec, objs...)
	if _, err := c.syncSnapshot(context.Background(), "ns/snap"); err != nil {
		t.Fatal(err)
	}
}

// cachedOver builds the loop over the fakes with its caches filled by hand
// with objs (and only them).
func cachedOver(t *testing.T, client *fake.Clientset, snaps *snapfake.Clientset, rec record.EventRecorder, objs ...runtime.Object) *Controller {
	t.Helper()
	inf := informers.NewSharedInformerFactory(client, 0)
	sinf := snapinformers.NewSharedInformerFactory(snaps, 0)
	c, err := New(Config{Client: client, Snapshots: snaps, Informers: inf, SnapshotInformers: sinf, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		var idx cache.Indexer
		switch o.(type) {
		case *corev1.PersistentVolumeClaim:
			idx = inf.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
		case *corev1.PersistentVolume:
			idx = inf.Core().V1().PersistentVolumes().Informer().GetIndexer()
		case *snapv1.VolumeSnapshotClass:
			idx = sinf.Snapshot().V1().VolumeSnapshotClasses().Informer().GetIndexer()
		case *snapv1.VolumeSnapshot:
			idx = sinf.Snapshot().V1().VolumeSnapshots().Informer().GetIndexer()
		case *snapv1.VolumeSnapshotContent:
			idx = sinf.Snapshot().V1().VolumeSnapshotContents().Informer().GetIndexer()
		}
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A snapshot whose content became ready has its status written before its
// claim is released: the user sees it ready one write sooner.
func TestReadySnapshotReleasesItsClaimAfterItsStatus(t *testing.T) {
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "c1",
		Finalizers: []string{snapshotapi.ClaimFinalizer}},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: "c1"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "snap", UID: "u1",
		Finalizers: []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")},
			VolumeSnapshotClassName: ptr.To("c")},
		Status: &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To("snapcontent-u1"), ReadyToUse: ptr.To(false)}}
	class := &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Driver: "d", DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	content := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-u1", Finalizers: []string{snapshotapi.ContentFinalizer}},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: "d", DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
			VolumeSnapshotClassName: ptr.To("c"), Source: snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To("h")},
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: "ns", Name: "snap", UID: "u1"}},
		Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("snap-h"), ReadyToUse: ptr.To(true), RestoreSize: ptr.To(int64(1))}}
	client := fake.NewClientset(claim, pv)
	snaps := snapfake.NewSimpleClientset(class, vs, content)
	var order []string
	note := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" {
			order = append(order, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
		return false, nil, nil
	}
	client.PrependReactor("*", "*", note)
	snaps.PrependReactor("*", "*", note)
	syncOnce(t, client, snaps, record.NewFakeRecorder(10), claim, pv, class, vs, content)
	want := []string{"update volumesnapshots/status", "update persistentvolumeclaims/"}
	if len(order) != len(want) || order[0] != want[0] || order[1] != want[1] {
		t.Fatalf("writes %v, want %v", order, want)
	}
	got, err := client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "data", metav1.GetOptions{})
	if err != nil || hasString(got.Finalizers, snapshotapi.ClaimFinalizer) {
		t.Errorf("claim %v, %v: want it released", got.Finalizers, err)
	}
}

// A content's change follows up its snapshot ahead of the snapshots not
// looked at yet: at 100,000 created at once, one FIFO made none ready until
// every first look was done.
func TestContentChangeFollowsUpItsSnapshotFirst(t *testing.T) {
	c := cachedOver(t, fake.NewClientset(), snapfake.NewSimpleClientset(), record.NewFakeRecorder(10))
	defer c.snapQ.ShutDown()
	for _, name := range []string{"new-1", "new-2"} {
		c.onSnapshot(&snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}})
	}
	c.onContent(&snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-u1"},
		Spec: snapv1.VolumeSnapshotContentSpec{VolumeSnapshotRef: corev1.ObjectReference{Namespace: "ns", Name: "started"}}})
	var got []string
	for range 3 {
		k, _ := c.snapQ.Get()
		got = append(got, k)
		c.snapQ.Done(k)
	}
	if want := []string{"ns/started", "ns/new-1", "ns/new-2"}; !slices.Equal(got, want) {
		t.Errorf("snapshots taken in order %v, want %v", got, want)
	}
}
