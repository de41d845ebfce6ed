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
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// A snapshot of a claim without a class: the default class of the claim's
// driver, the content snapcontent-<uid> from the claim's volume, the
// finalizers on snapshot, content and claim, the status mirrored once the
// sidecar reports, the claim released when ready, and deletion through the
// content.
func TestDynamicSnapshotLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := stacktest.Namespace(t)
	claim := boundClaim(t, ns, "data")
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := snapshotOf(t, ns, "snap", "data", nil)
	name := snapshotapi.ContentName(s.UID)

	s = snapshotHas(t, "snapshot bound with the default class", ns, "snap", func(s *snapv1.VolumeSnapshot) string {
		switch {
		case ptr.Deref(s.Spec.VolumeSnapshotClassName, "") != bundle.SnapshotClass:
			return fmt.Sprintf("class %v", s.Spec.VolumeSnapshotClassName)
		case s.Status == nil || ptr.Deref(s.Status.BoundVolumeSnapshotContentName, "") != name:
			return fmt.Sprintf("status %+v", s.Status)
		}
		return support.HasFinalizer(s.Finalizers, snapshotapi.AsSourceFinalizer) + support.HasFinalizer(s.Finalizers, snapshotapi.BoundFinalizer)
	})
	if ptr.Deref(s.Status.ReadyToUse, true) {
		t.Errorf("snapshot ready before its content")
	}
	c := contentHas(t, "content protected", name, func(c *snapv1.VolumeSnapshotContent) string {
		return support.HasFinalizer(c.Finalizers, snapshotapi.ContentFinalizer)
	})
	r := c.Spec.VolumeSnapshotRef
	if r.Namespace != ns || r.Name != "snap" || r.UID != s.UID || r.Kind != "VolumeSnapshot" ||
		ptr.Deref(c.Spec.Source.VolumeHandle, "") != pv.Spec.CSI.VolumeHandle || c.Spec.Driver != hostpath.DriverName ||
		c.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentDelete || ptr.Deref(c.Spec.VolumeSnapshotClassName, "") != bundle.SnapshotClass ||
		ptr.Deref(c.Spec.SourceVolumeMode, "") != corev1.PersistentVolumeFilesystem {
		t.Errorf("content spec %+v", c.Spec)
	}
	stacktest.Eventually(t, "claim protected while the snapshot is made", support.ClaimFinalizer(kube, ns, "data", snapshotapi.ClaimFinalizer, true), alive)
	eventFor(t, ns, "snap", "CreatingSnapshot", "Waiting for a snapshot "+ns+"/snap to be created by the CSI driver.")

	// The sidecar cuts the snapshot.
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sidecarReports(t, name, snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("backend-1"),
		CreationTime: ptr.To(created.UnixNano()), RestoreSize: ptr.To[int64](10 << 20), ReadyToUse: ptr.To(true)})
	snapshotHas(t, "snapshot ready", ns, "snap", func(s *snapv1.VolumeSnapshot) string {
		st := s.Status
		if st == nil || !ptr.Deref(st.ReadyToUse, false) || st.RestoreSize == nil || st.RestoreSize.Value() != 10<<20 ||
			st.CreationTime == nil || !st.CreationTime.Time.Equal(created) {
			return fmt.Sprintf("status %+v", st)
		}
		return ""
	})
	eventFor(t, ns, "snap", "SnapshotCreated", "Snapshot "+ns+"/snap was successfully created by the CSI driver.")
	eventFor(t, ns, "snap", "SnapshotReady", "Snapshot "+ns+"/snap is ready to use.")
	stacktest.Eventually(t, "claim released once the snapshot is ready", support.ClaimFinalizer(kube, ns, "data", snapshotapi.ClaimFinalizer, false), alive)

	// Deleting: the content is annotated and deleted; the snapshot stays
	// (bound finalizer) until the sidecar lets the content go.
	if err := snaps.SnapshotV1().VolumeSnapshots(ns).Delete(ctx, "snap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	contentHas(t, "content annotated and deleted", name, func(c *snapv1.VolumeSnapshotContent) string {
		if _, ok := c.Annotations[snapshotapi.BeingDeleted]; !ok || c.DeletionTimestamp == nil {
			return fmt.Sprintf("annotations %v deletion %v", c.Annotations, c.DeletionTimestamp)
		}
		return ""
	})
	snapshotHas(t, "snapshot kept by its bound finalizer", ns, "snap", func(s *snapv1.VolumeSnapshot) string {
		return support.LacksFinalizer(s.Finalizers, snapshotapi.AsSourceFinalizer) + support.HasFinalizer(s.Finalizers, snapshotapi.BoundFinalizer)
	})
	sidecarReleases(t, name)
	stacktest.Eventually(t, "snapshot and content gone", support.SnapshotAndContentGone(snaps, ns, "snap", name), alive)
}

// A claim being deleted is not snapshotted (external-snapshotter #349):
// no content, no finalizer on the claim, the reference's event.
func TestClaimBeingDeletedIsNotSnapshotted(t *testing.T) {
	ctx := context.Background()
	ns := stacktest.Namespace(t)
	boundClaim(t, ns, "data")
	// Retried on conflict: the provisioner may still be taking its marks off.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		claim, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return err
		}
		claim.Finalizers = append(claim.Finalizers, "test.volplane.io/hold")
		_, err = kube.CoreV1().PersistentVolumeClaims(ns).Update(ctx, claim, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { releaseClaim(ns, "data") })
	if err := kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s := snapshotOf(t, ns, "snap", "data", ptr.To(bundle.SnapshotClass))
	eventFor(t, ns, "snap", "SnapshotContentCreationFailed", "cannot add finalizer on claim because it is being deleted")
	if _, err := getContent(snapshotapi.ContentName(s.UID)); !apierrors.IsNotFound(err) {
		t.Errorf("content: %v, want none", err)
	}
	got, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if msg := support.LacksFinalizer(got.Finalizers, snapshotapi.ClaimFinalizer); msg != "" {
		t.Error(msg)
	}
}

func releaseClaim(ns, name string) {
	ctx := context.Background()
	c, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	var keep []string
	for _, f := range c.Finalizers {
		if f != "test.volplane.io/hold" {
			keep = append(keep, f)
		}
	}
	c.Finalizers = keep
	_, _ = kube.CoreV1().PersistentVolumeClaims(ns).Update(ctx, c, metav1.UpdateOptions{})
}

// A snapshot whose content failed lets its claim go (the reference keeps
// the claim until the snapshot is deleted, external-snapshotter #1305).
func TestFailedSnapshotReleasesItsClaim(t *testing.T) {
	ctx := context.Background()
	ns := stacktest.Namespace(t)
	boundClaim(t, ns, "data")
	s := snapshotOf(t, ns, "snap", "data", ptr.To(bundle.SnapshotClass))
	name := snapshotapi.ContentName(s.UID)
	claimFinalizer := func(want bool) func() string {
		return support.ClaimFinalizer(kube, ns, "data", snapshotapi.ClaimFinalizer, want)
	}
	stacktest.Eventually(t, "claim protected", claimFinalizer(true), alive)
	contentHas(t, "content made", name, func(*snapv1.VolumeSnapshotContent) string { return "" })
	sidecarReports(t, name, snapv1.VolumeSnapshotContentStatus{ReadyToUse: ptr.To(false),
		Error: &snapv1.VolumeSnapshotError{Time: &metav1.Time{Time: time.Now()}, Message: ptr.To("driver refused")}})
	stacktest.Eventually(t, "claim released by the failed snapshot", claimFinalizer(false), alive)
	snapshotHas(t, "error mirrored", ns, "snap", func(s *snapv1.VolumeSnapshot) string {
		if s.Status == nil || s.Status.Error == nil || ptr.Deref(s.Status.Error.Message, "") != "driver refused" {
			return fmt.Sprintf("status %+v", s.Status)
		}
		return ""
	})
	// The claim can now be deleted while the failed snapshot stays.
	if err := kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "claim gone", func() string {
		if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("claim: %v", err)
		}
		return ""
	}, alive)
}
