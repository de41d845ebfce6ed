package snapshot

import (
	"context"
	"fmt"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// preProvisioned creates (as the administrator) a Retain content of a
// backend handle whose volumeSnapshotRef names refNS/refName.
func preProvisioned(t *testing.T, name, refNS, refName string) {
	t.Helper()
	c := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: refNS, Name: refName},
			Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To("backend-" + name)},
			DeletionPolicy:    snapv1.VolumeSnapshotContentRetain, Driver: hostpath.DriverName}}
	if _, err := snaps.SnapshotV1().VolumeSnapshotContents().Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = snaps.SnapshotV1().VolumeSnapshotContents().Delete(context.Background(), name, metav1.DeleteOptions{})
		sidecarReleases(t, name)
	})
}

func namingContent(t *testing.T, ns, name, content string) *snapv1.VolumeSnapshot {
	t.Helper()
	s := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To(content)}}}
	got, err := snaps.SnapshotV1().VolumeSnapshots(ns).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func unbound(s *snapv1.VolumeSnapshot) string {
	if s.Status != nil && s.Status.BoundVolumeSnapshotContentName != nil {
		return fmt.Sprintf("bound to %s", *s.Status.BoundVolumeSnapshotContentName)
	}
	return ""
}

// A pre-provisioned content whose volumeSnapshotRef points into another
// namespace binds only to that namespace's snapshot of that name: a
// snapshot of the same name elsewhere that names it is never bound and
// never gets its handle.
func TestPreProvisionedContentBindsOnlyInItsNamespace(t *testing.T) {
	ctx := context.Background()
	evil, owner := stacktest.Namespace(t), stacktest.Namespace(t)
	content := "pre-" + owner
	preProvisioned(t, content, owner, "snap")

	namingContent(t, evil, "snap", content)
	eventFor(t, evil, "snap", "SnapshotContentMisbound", "VolumeSnapshotContent ["+content+"] is bound to a different snapshot")

	theirs := namingContent(t, owner, "snap", content)
	c := contentHas(t, "content bound to the owner's snapshot", content, func(c *snapv1.VolumeSnapshotContent) string {
		if c.Spec.VolumeSnapshotRef.UID != theirs.UID {
			return fmt.Sprintf("ref %+v", c.Spec.VolumeSnapshotRef)
		}
		return support.HasFinalizer(c.Finalizers, snapshotapi.ContentFinalizer)
	})
	if c.Spec.VolumeSnapshotRef.Namespace != owner {
		t.Errorf("ref %+v", c.Spec.VolumeSnapshotRef)
	}
	sidecarReports(t, content, snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("backend-" + content),
		ReadyToUse: ptr.To(true), RestoreSize: ptr.To[int64](1 << 20), CreationTime: ptr.To(time.Now().UnixNano())})
	snapshotHas(t, "owner's snapshot ready", owner, "snap", func(s *snapv1.VolumeSnapshot) string {
		if s.Status == nil || !ptr.Deref(s.Status.ReadyToUse, false) || ptr.Deref(s.Status.BoundVolumeSnapshotContentName, "") != content {
			return fmt.Sprintf("status %+v", s.Status)
		}
		return ""
	})
	stacktest.Holds(t, "the other namespace's snapshot stays unbound", time.Second, func() string {
		s, err := getSnapshot(evil, "snap")
		if err != nil {
			return err.Error()
		}
		return unbound(s)
	})

	// Deleting the owner's snapshot under Retain: the content stays,
	// annotated, and the snapshot goes.
	if err := snaps.SnapshotV1().VolumeSnapshots(owner).Delete(ctx, "snap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "owner's snapshot gone, content kept", func() string {
		if _, err := getSnapshot(owner, "snap"); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("snapshot: %v", err)
		}
		c, err := getContent(content)
		if err != nil {
			return err.Error()
		}
		if _, ok := c.Annotations[snapshotapi.BeingDeleted]; !ok || c.DeletionTimestamp != nil {
			return fmt.Sprintf("content annotations %v deletion %v", c.Annotations, c.DeletionTimestamp)
		}
		return ""
	}, alive)
}

// A snapshot naming another namespace's dynamic content, or carrying a
// status and annotations that name it, never binds it, and its deletion
// never touches it.
func TestSnapshotNamingAnotherTenantsContent(t *testing.T) {
	ctx := context.Background()
	evil, victim := stacktest.Namespace(t), stacktest.Namespace(t)
	boundClaim(t, victim, "data")
	vs := snapshotOf(t, victim, "snap", "data", ptr.To(bundle.SnapshotClass))
	theirs := snapshotapi.ContentName(vs.UID)
	contentHas(t, "victim's content", theirs, func(c *snapv1.VolumeSnapshotContent) string {
		return support.HasFinalizer(c.Finalizers, snapshotapi.ContentFinalizer)
	})

	namingContent(t, evil, "by-name", theirs)
	eventFor(t, evil, "by-name", "SnapshotContentMismatch", "VolumeSnapshotContent is dynamically provisioned while expecting a pre-provisioned one")

	// A snapshot whose annotations and status name the victim's content
	// (status written with admin rights: the worst case).
	forged := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: evil, Name: "forged", Annotations: map[string]string{
		snapshotapi.BeingDeleted: "yes", snapshotapi.GroupHandleAnnotation: "x", "snapshot.storage.kubernetes.io/content": theirs}},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To("nothing-" + evil)}}}
	if _, err := snaps.SnapshotV1().VolumeSnapshots(evil).Create(ctx, forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "status forged", func() string {
		s, err := getSnapshot(evil, "forged")
		if err != nil {
			return err.Error()
		}
		s.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To(theirs), ReadyToUse: ptr.To(true)}
		if _, err := snaps.SnapshotV1().VolumeSnapshots(evil).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
			return err.Error()
		}
		return ""
	}, alive)
	snapshotHas(t, "forged snapshot protected by the loop", evil, "forged", func(s *snapv1.VolumeSnapshot) string {
		return support.HasFinalizer(s.Finalizers, snapshotapi.AsSourceFinalizer)
	})
	if err := snaps.SnapshotV1().VolumeSnapshots(evil).Delete(ctx, "forged", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := snaps.SnapshotV1().VolumeSnapshots(evil).Delete(ctx, "by-name", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "evil snapshots gone", func() string {
		_, e1 := getSnapshot(evil, "forged")
		_, e2 := getSnapshot(evil, "by-name")
		if apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2) {
			return ""
		}
		return fmt.Sprintf("%v, %v", e1, e2)
	}, alive)
	c, err := getContent(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Annotations[snapshotapi.BeingDeleted]; ok || c.DeletionTimestamp != nil || c.Spec.VolumeSnapshotRef.Namespace != victim {
		t.Errorf("victim's content touched: annotations %v deletion %v ref %+v", c.Annotations, c.DeletionTimestamp, c.Spec.VolumeSnapshotRef)
	}
}

// A snapshot's claim is looked up in its own namespace only.
func TestClaimOfAnotherNamespaceIsNotSnapshotted(t *testing.T) {
	ctx := context.Background()
	evil, victim := stacktest.Namespace(t), stacktest.Namespace(t)
	boundClaim(t, victim, "data")
	s := snapshotOf(t, evil, "snap", "data", ptr.To(bundle.SnapshotClass))
	eventFor(t, evil, "snap", "SnapshotContentCreationFailed", "failed to retrieve PVC data")
	snapshotOf(t, evil, "no-class", "data", nil)
	eventFor(t, evil, "no-class", "SetDefaultSnapshotClassFailed", "failed to retrieve PVC data")
	if _, err := getContent(snapshotapi.ContentName(s.UID)); !apierrors.IsNotFound(err) {
		t.Errorf("content: %v, want none", err)
	}
	c, err := kube.CoreV1().PersistentVolumeClaims(victim).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if msg := support.LacksFinalizer(c.Finalizers, snapshotapi.ClaimFinalizer); msg != "" {
		t.Error(msg)
	}
}
