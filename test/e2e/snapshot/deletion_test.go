package snapshot

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// readySnapshot makes a claim and a snapshot of it, and plays the sidecar
// until the snapshot is ready; it returns the content's name.
func readySnapshot(t *testing.T, ns string) string {
	t.Helper()
	boundClaim(t, ns, "data")
	s := snapshotOf(t, ns, "snap", "data", ptr.To(bundle.SnapshotClass))
	name := snapshotapi.ContentName(s.UID)
	contentHas(t, "content made", name, func(c *snapv1.VolumeSnapshotContent) string {
		return support.HasFinalizer(c.Finalizers, snapshotapi.ContentFinalizer)
	})
	sidecarReports(t, name, snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("b-" + name), ReadyToUse: ptr.To(true),
		RestoreSize: ptr.To[int64](10 << 20), CreationTime: ptr.To(time.Now().UnixNano())})
	snapshotHas(t, "snapshot ready", ns, "snap", func(s *snapv1.VolumeSnapshot) string {
		if s.Status == nil || !ptr.Deref(s.Status.ReadyToUse, false) {
			return fmt.Sprintf("status %+v", s.Status)
		}
		return support.HasFinalizer(s.Finalizers, snapshotapi.BoundFinalizer)
	})
	return name
}

// kept asserts the snapshot being deleted stays, its content untouched.
func kept(t *testing.T, ns, content string) {
	t.Helper()
	stacktest.Holds(t, "snapshot kept", time.Second, func() string {
		s, err := getSnapshot(ns, "snap")
		if err != nil {
			return err.Error()
		}
		if msg := support.HasFinalizer(s.Finalizers, snapshotapi.AsSourceFinalizer); msg != "" {
			return msg
		}
		c, err := getContent(content)
		if err != nil {
			return err.Error()
		}
		if c.DeletionTimestamp != nil {
			return "content deleted"
		}
		return ""
	})
}

// deletedThroughContent waits for the content's deletion, plays the
// sidecar, and waits for both to be gone.
func deletedThroughContent(t *testing.T, ns, content string) {
	t.Helper()
	contentHas(t, "content deleted", content, func(c *snapv1.VolumeSnapshotContent) string {
		if c.DeletionTimestamp == nil {
			return "not deleted"
		}
		return ""
	})
	sidecarReleases(t, content)
	stacktest.Eventually(t, "snapshot gone", func() string {
		if _, err := getSnapshot(ns, "snap"); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("snapshot: %v", err)
		}
		return ""
	}, alive)
}

// A snapshot a Pending claim restores from is kept until the claim no
// longer waits for it (external-snapshotter v8.6.0, #1394).
func TestSnapshotKeptWhileAPendingClaimRestoresFromIt(t *testing.T) {
	ctx := context.Background()
	ns := stacktest.Namespace(t)
	content := readySnapshot(t, ns)
	// A class nobody provisions: the claim stays Pending.
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "nobody-" + ns}, Provisioner: "nobody.example.com"}
	if _, err := kube.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.StorageV1().StorageClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
	restore := support.Claim(ns, "restored", class.Name, "10Mi", support.FromSnapshot("snap"))
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, restore, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := snaps.SnapshotV1().VolumeSnapshots(ns).Delete(ctx, "snap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventFor(t, ns, "snap", "SnapshotDeletePending", "Snapshot is being used to restore a PVC")
	kept(t, ns, content)
	if err := kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "restored", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deletedThroughContent(t, ns, content)
}

// A member of a live group snapshot is not deleted alone; once the group
// is gone it is.
func TestGroupMemberNotDeletedAlone(t *testing.T) {
	ctx := context.Background()
	ns := stacktest.Namespace(t)
	content := readySnapshot(t, ns)
	group := &groupv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "group"},
		Spec: groupv1.VolumeGroupSnapshotSpec{Source: groupv1.VolumeGroupSnapshotSource{VolumeGroupSnapshotContentName: ptr.To("none-" + ns)}}}
	if _, err := snaps.GroupsnapshotV1().VolumeGroupSnapshots(ns).Create(ctx, group, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "snapshot marked a member", func() string {
		s, err := getSnapshot(ns, "snap")
		if err != nil {
			return err.Error()
		}
		s.Status.VolumeGroupSnapshotName = ptr.To("group")
		if _, err := snaps.SnapshotV1().VolumeSnapshots(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
			return err.Error()
		}
		return ""
	}, alive)
	if err := snaps.SnapshotV1().VolumeSnapshots(ns).Delete(ctx, "snap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventFor(t, ns, "snap", "SnapshotDeletePending",
		"deletion of the individual volume snapshot "+ns+"/snap is not allowed as it belongs to group snapshot "+ns+"/group.")
	kept(t, ns, content)
	stacktest.Eventually(t, "group gone", func() string {
		g, err := snaps.GroupsnapshotV1().VolumeGroupSnapshots(ns).Get(ctx, "group", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		if err != nil {
			return err.Error()
		}
		if g.DeletionTimestamp == nil {
			err = snaps.GroupsnapshotV1().VolumeGroupSnapshots(ns).Delete(ctx, "group", metav1.DeleteOptions{})
		} else if len(g.Finalizers) > 0 { // no group loop here to release it
			g.Finalizers = nil
			_, err = snaps.GroupsnapshotV1().VolumeGroupSnapshots(ns).Update(ctx, g, metav1.UpdateOptions{})
		}
		return fmt.Sprintf("group still there (%v)", err)
	}, alive)
	deletedThroughContent(t, ns, content)
}

// `volplane controller --controllers snapshot` refuses to start while
// another snapshot-controller renews its Lease, and says so.
func TestRefusesBesideAnotherSnapshotController(t *testing.T) {
	ctx := context.Background()
	ns := stacktest.Namespace(t)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snapshot-controller-leader"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("snapshot-controller-abc"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	if _, err := kube.CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := manager.DefaultConfig()
	cfg.REST = rest.CopyConfig(stack.CP.RESTConfig)
	cfg.Controllers, cfg.LeaderElect, cfg.MetricsAddr = []string{manager.Snapshot}, false, ""
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := manager.Run(runCtx, cfg)
	if err == nil || !strings.Contains(err.Error(), "another snapshot-controller runs in this cluster (Lease "+ns+"/snapshot-controller-leader") {
		t.Fatalf("manager.Run = %v, want a refusal naming the Lease", err)
	}
	if runCtx.Err() != nil {
		t.Fatalf("refused only at the timeout")
	}
}
