package snapshotter

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
)

// A dynamic content is snapshotted once, on the node of its source volume,
// with the reference's name, parameters and secret; its status says so;
// under Delete its deletion deletes the backend snapshot on that node.
func TestDynamicSnapshotOnTheSourceNodeThenDelete(t *testing.T) {
	ns := stacktest.Namespace(t)
	creds := secret(t, ns)
	volume := makeVolume(t, 1) // the second node: the pool's first endpoint would be wrong
	c := dynamicContent(ns, "db", volume, snapv1.VolumeSnapshotContentDelete)
	create(t, c)
	ready := waitReady(t, c.Name)

	backend := snapshotapi.BackendName(c.Spec.VolumeSnapshotRef.UID)
	calls := bed.calls.of("CreateSnapshot", backend)
	if len(calls) != 1 {
		t.Fatalf("CreateSnapshot %s called %d times, want once: %+v", backend, len(calls), calls)
	}
	want := map[string]string{"tier": "gold", snapshotapi.SnapshotNameKey: "db", snapshotapi.SnapshotNamespaceKey: ns,
		snapshotapi.ContentNameKey: c.Name}
	if got := calls[0]; got.node != bed.nodes[1] || got.source != volume || !maps.Equal(got.params, want) || !maps.Equal(got.secrets, creds) {
		t.Fatalf("CreateSnapshot = %+v, want on %s of %s with %v and the class's secret", got, bed.nodes[1], volume, want)
	}
	st := ready.Status
	if st.SnapshotHandle == nil || st.CreationTime == nil || *st.CreationTime <= 0 || st.RestoreSize == nil || *st.RestoreSize != 1<<20 || st.Error != nil {
		t.Fatalf("status %+v: want the snapshot's handle, creation time, restore size and no error", st)
	}
	stacktest.Eventually(t, "being-created removed once the snapshot is taken", func() string {
		if a := get(t, c.Name).Annotations; a[snapshotapi.BeingCreated] != "" {
			return fmt.Sprintf("annotations %v", a)
		}
		return ""
	}, alive)
	id := *st.SnapshotHandle
	if !holds(t, 1, id) || holds(t, 0, id) {
		t.Fatalf("snapshot %s: want it on %s only", id, bed.nodes[1])
	}

	deleteAsSnapshotController(t, c.Name)
	stacktest.Eventually(t, "content released and gone", contentGone(c.Name), alive)
	if holds(t, 1, id) {
		t.Fatalf("backend snapshot %s left behind after its Delete-policy content went", id)
	}
	dels := bed.calls.of("DeleteSnapshot", id)
	if len(dels) == 0 || dels[0].node != bed.nodes[1] || !maps.Equal(dels[0].secrets, creds) {
		t.Fatalf("DeleteSnapshot calls %+v: want one on %s with the secret", dels, bed.nodes[1])
	}
	if n := len(bed.calls.of("CreateSnapshot", backend)); n != 1 {
		t.Fatalf("CreateSnapshot called %d times in all, want once", n)
	}
}

// Under Retain the content goes and the backend snapshot stays.
func TestRetainKeepsTheBackendSnapshot(t *testing.T) {
	ns := stacktest.Namespace(t)
	secret(t, ns)
	volume := makeVolume(t, 0)
	c := dynamicContent(ns, "keep", volume, snapv1.VolumeSnapshotContentRetain)
	create(t, c)
	id := *waitReady(t, c.Name).Status.SnapshotHandle
	t.Cleanup(func() { _ = endpoint(0).DeleteSnapshot(context.Background(), id, nil) })

	deleteAsSnapshotController(t, c.Name)
	stacktest.Eventually(t, "content released and gone", contentGone(c.Name), alive)
	if !holds(t, 0, id) {
		t.Fatalf("backend snapshot %s deleted under Retain", id)
	}
	if dels := bed.calls.of("DeleteSnapshot", id); len(dels) > 0 {
		t.Fatalf("DeleteSnapshot called under Retain: %+v", dels)
	}
}

// A pre-provisioned content (a snapshot taken through the driver) is
// checked with ListSnapshots, never created; unbound and deleted under
// Delete, its snapshot is deleted on the node that holds it.
func TestPreProvisionedIsCheckedThenDeleted(t *testing.T) {
	volume := makeVolume(t, 1)
	snap, err := endpoint(1).CreateSnapshot(context.Background(), &csipb.CreateSnapshotRequest{SourceVolumeId: volume, Name: "admin-" + string(uuid.NewUUID())})
	if err != nil {
		t.Fatalf("CreateSnapshot through the driver: %v", err)
	}
	id := snap.GetSnapshotId()
	t.Cleanup(func() { _ = endpoint(1).DeleteSnapshot(context.Background(), id, nil) })
	// Unbound, with the finalizer (as left by the snapshot-controller once
	// a snapshot was bound to it, or by the administrator).
	c := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "pre-" + string(uuid.NewUUID()), Finalizers: []string{snapshotapi.ContentFinalizer}},
		Spec: snapv1.VolumeSnapshotContentSpec{VolumeSnapshotRef: snapshotRef("somewhere", "imported", ""),
			DeletionPolicy: snapv1.VolumeSnapshotContentDelete, Driver: hostpath.DriverName,
			Source: snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To(id)}}}
	create(t, c)
	st := waitReady(t, c.Name).Status
	if *st.SnapshotHandle != id || st.RestoreSize == nil || *st.RestoreSize != 1<<20 || *st.CreationTime != snap.GetCreationTime().AsTime().UnixNano() {
		t.Fatalf("status %+v: want the driver's snapshot %s as ListSnapshots reports it", st, id)
	}

	deleteContent(t, c.Name) // unbound: no being-deleted annotation needed
	stacktest.Eventually(t, "content gone", contentGone(c.Name), alive)
	if holds(t, 1, id) {
		t.Fatalf("pre-provisioned snapshot %s left behind under Delete", id)
	}
	if dels := bed.calls.of("DeleteSnapshot", id); len(dels) == 0 || dels[0].node != bed.nodes[1] {
		t.Fatalf("DeleteSnapshot calls %+v: want one on %s", dels, bed.nodes[1])
	}
}

// A pre-provisioned content naming a snapshot no driver holds is not
// ready, with the reference's error.
func TestPreProvisionedMissingSnapshotIsAnError(t *testing.T) {
	c := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "pre-" + string(uuid.NewUUID())},
		Spec: snapv1.VolumeSnapshotContentSpec{VolumeSnapshotRef: snapshotRef("somewhere", "imported", ""),
			DeletionPolicy: snapv1.VolumeSnapshotContentRetain, Driver: hostpath.DriverName,
			Source: snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To("snap-nowhere")}}}
	create(t, c)
	stacktest.Eventually(t, "error status", func() string {
		st := get(t, c.Name).Status
		if st == nil || st.Error == nil || st.Error.Message == nil || !strings.Contains(*st.Error.Message, "can not find snapshot for snapshotID snap-nowhere") ||
			st.ReadyToUse == nil || *st.ReadyToUse {
			if st != nil && st.Error != nil && st.Error.Message != nil {
				return "error " + *st.Error.Message
			}
			return fmt.Sprintf("status %+v", st)
		}
		return ""
	}, alive)
	stacktest.Eventually(t, "the reference's event", func() string {
		list, err := bed.cp.Client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + c.Name})
		if err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.Reason == "SnapshotContentCheckandUpdateFailed" && e.Type == "Warning" && e.Source.Component == "csi-snapshotter "+hostpath.DriverName &&
				strings.HasPrefix(e.Message, "Failed to check and update snapshot content: ") {
				return ""
			}
		}
		return fmt.Sprintf("events %v", list.Items)
	}, alive)
}

// external-snapshotter#1388 and #134: CreateSnapshot is slow and then
// times out (the driver made the snapshot, its answer was lost), and the
// snapshot is deleted meanwhile. The content keeps being-created and its
// finalizer while no create answered; once a create answers, its snapshot
// is deleted at once, without waiting for a resync or a restart.
func TestSlowCreateThenDeleteNeverLeaks(t *testing.T) {
	ns := stacktest.Namespace(t)
	secret(t, ns)
	volume := makeVolume(t, 0)
	c := dynamicContent(ns, "slow", volume, snapv1.VolumeSnapshotContentDelete)
	backend := snapshotapi.BackendName(c.Spec.VolumeSnapshotRef.UID)
	called, release := holdFirstCreate(t, backend, func(h func() (any, error)) (any, error) {
		if _, err := h(); err != nil {
			return nil, err
		}
		return nil, status.Error(codes.DeadlineExceeded, "the answer was lost")
	})
	create(t, c)
	<-called
	deleteAsSnapshotController(t, c.Name)
	stacktest.Holds(t, "content kept while CreateSnapshot has not answered", 500*time.Millisecond, func() string {
		cur := get(t, c.Name)
		if _, ok := cur.Annotations[snapshotapi.BeingCreated]; !ok || !slices.Contains(cur.Finalizers, snapshotapi.ContentFinalizer) {
			return fmt.Sprintf("annotations %v, finalizers %v", cur.Annotations, cur.Finalizers)
		}
		return ""
	})
	close(release)
	stacktest.Eventually(t, "content gone once a create answered", contentGone(c.Name), alive)
	if ids := snapshotsOf(t, 0, volume); len(ids) > 0 {
		t.Fatalf("backend snapshots %v leaked", ids)
	}
	if n := len(bed.calls.of("CreateSnapshot", backend)); n < 2 {
		t.Fatalf("CreateSnapshot called %d times: want the lost answer asked for again", n)
	}
}

// A crash between CreateSnapshot and the status write: the restarted loop
// finds being-created and no status, asks again under the same name (the
// driver answers the snapshot it made), and nothing leaks: one snapshot,
// deleted with the content.
func TestCrashBetweenCreateAndStatusNeverLeaks(t *testing.T) {
	ns := stacktest.Namespace(t)
	secret(t, ns)
	volume := makeVolume(t, 1)
	c := dynamicContent(ns, "crash", volume, snapv1.VolumeSnapshotContentDelete)
	backend := snapshotapi.BackendName(c.Spec.VolumeSnapshotRef.UID)
	// The caller is gone by the time the driver answers: its answer is
	// lost.
	called, release := holdFirstCreate(t, backend, func(h func() (any, error)) (any, error) { return h() })
	create(t, c)
	<-called
	restartLoops(t, func() {
		cur := get(t, c.Name)
		if _, ok := cur.Annotations[snapshotapi.BeingCreated]; !ok || cur.Status != nil {
			t.Errorf("crashed mid-create: annotations %v, status %+v; want being-created and no status", cur.Annotations, cur.Status)
		}
		close(release)
	})
	ready := waitReady(t, c.Name)
	if ids := snapshotsOf(t, 1, volume); len(ids) != 1 || ids[0] != *ready.Status.SnapshotHandle {
		t.Fatalf("backend snapshots %v, want exactly the content's %s", ids, *ready.Status.SnapshotHandle)
	}
	deleteAsSnapshotController(t, c.Name)
	stacktest.Eventually(t, "content gone", contentGone(c.Name), alive)
	if ids := snapshotsOf(t, 1, volume); len(ids) > 0 {
		t.Fatalf("backend snapshots %v leaked", ids)
	}
}

// external-snapshotter#1446: the content is deleted before its
// being-deleted annotation lands (the snapshot-controller's PATCH was
// throttled). Nothing is deleted without it (the snapshot may still be
// wanted), and the late annotation is acted on.
func TestLateBeingDeletedAnnotation(t *testing.T) {
	ns := stacktest.Namespace(t)
	secret(t, ns)
	volume := makeVolume(t, 0)
	c := dynamicContent(ns, "late", volume, snapv1.VolumeSnapshotContentDelete)
	create(t, c)
	id := *waitReady(t, c.Name).Status.SnapshotHandle
	deleteContent(t, c.Name)
	stacktest.Holds(t, "nothing deleted before being-deleted", 500*time.Millisecond, func() string {
		if !holds(t, 0, id) || len(bed.calls.of("DeleteSnapshot", id)) > 0 {
			return "the backend snapshot was deleted without the snapshot-controller's word"
		}
		return ""
	})
	markBeingDeleted(t, c.Name)
	stacktest.Eventually(t, "content gone", contentGone(c.Name), alive)
	if holds(t, 0, id) {
		t.Fatalf("backend snapshot %s leaked", id)
	}
}
