package snapshot

import (
	"context"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// The soak, seed 42: the workload deleted snapshot s65 just as this loop
// added its finalizers; the API server's DELETE had read it without them
// and removed it past them, with no deletion timestamp, while the sync
// that added them went on to create its content. The delete event shows
// the finalizers the API server skipped; the content made for that
// snapshot is then deleted as the snapshot's deletion would have.
func TestContentOfASnapshotDeletedPastItsFinalizersIsDeleted(t *testing.T) {
	ctx := context.Background()
	_, _, _, snap, _, _, content := releaseRace()
	snap.Name, snap.UID = "snap", "u1"
	content.Name, content.Spec.VolumeSnapshotRef.UID, content.Finalizers = snapshotapi.ContentName("u1"), "u1", nil
	snaps := snapfake.NewSimpleClientset(content)
	c := cachedOver(t, fake.NewClientset(), snaps, record.NewFakeRecorder(10), content)
	// A relist's tombstone is no proof: the content stays.
	c.onSnapshotGone(cache.DeletedFinalStateUnknown{Key: "ns/snap", Obj: snap})
	if _, err := c.syncContent(ctx, content.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("content deleted on a tombstone: %v", err)
	}
	// The watch's delete event of the snapshot as it was: finalizers, no
	// deletion timestamp.
	c.onSnapshotGone(snap)
	if _, err := c.syncContent(ctx, content.Name); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, a := range snaps.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	if _, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{}); !errors.IsNotFound(err) {
		t.Fatalf("content of a snapshot deleted past its finalizers kept (%v): %v", verbs, err)
	}
	// The finalizer (the snapshotter deletes the backend snapshot only of
	// a content that has it; each sync adds it to the cached copy), then
	// the mark, then the delete.
	if want := "patch patch patch delete"; strings.Join(verbs, " ") != want {
		t.Errorf("writes %v, want %s", verbs, want)
	}
}

// A snapshot deleted the ordinary way (a deletion timestamp first) or one
// that never had our finalizers tells nothing: the content of a snapshot
// gone is kept (the data-loss guard).
func TestContentOfASnapshotGoneOrdinarilyIsKept(t *testing.T) {
	ctx := context.Background()
	_, _, _, snap, _, _, content := releaseRace()
	snap.UID = "u1"
	content.Name, content.Spec.VolumeSnapshotRef.UID, content.Spec.VolumeSnapshotRef.Name = snapshotapi.ContentName("u1"), "u1", "snap"
	deleted := snap.DeepCopy()
	deleted.DeletionTimestamp = &metav1.Time{}
	bare := snap.DeepCopy()
	bare.Finalizers = nil
	for _, gone := range []*snapv1.VolumeSnapshot{deleted, bare} {
		snaps := snapfake.NewSimpleClientset(content)
		c := cachedOver(t, fake.NewClientset(), snaps, record.NewFakeRecorder(10), content)
		c.onSnapshotGone(gone)
		if _, err := c.syncContent(ctx, content.Name); err != nil {
			t.Fatal(err)
		}
		if _, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{}); err != nil {
			t.Fatalf("content deleted after %+v: %v", gone.ObjectMeta, err)
		}
	}
}
