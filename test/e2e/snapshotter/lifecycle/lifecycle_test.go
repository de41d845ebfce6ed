// Package lifecycle runs a VolumeSnapshot through everything `volplane up`
// runs (stacktest.Stack, the snapshot and snapshotter loops included)
// against the embedded, real kube-apiserver: a user's VolumeSnapshot of a
// bound claim becomes ready, and its deletion deletes the driver's
// snapshot.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

var (
	stack *stacktest.Stack
	snaps snapclient.Interface
	pool  *csi.Pool
)

func TestMain(m *testing.M) {
	support.StackMain(m, 1, "vp-snapl-", stacktest.StackConfig{Capacity: 1 << 30}, func(cp *cluster.ControlPlane, s *stacktest.Stack) error {
		stack = s
		var err error
		if snaps, err = snapclient.NewForConfig(cp.RESTConfig); err != nil {
			return err
		}
		// The test's own client of the drivers, to read their snapshots.
		pool, err = csi.DialPool(context.Background(), s.Drivers.Endpoints, nil)
		return err
	})
}

func alive() error { return stack.EndedEarly() }

// VolumeSnapshot → ready → deleted → the driver's snapshot is gone.
func TestVolumeSnapshotReadyThenDeletedLeavesNoBackendSnapshot(t *testing.T) {
	ctx := context.Background()
	kube := stack.CP.Client
	ns := stacktest.Namespace(t)
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, support.Claim(ns, "data", bundle.ImmediateClass, "10Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "claim bound", stacktest.ClaimPhase(ctx, kube, ns, "data", corev1.ClaimBound), alive)
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}}}
	vs, err := snaps.SnapshotV1().VolumeSnapshots(ns).Create(ctx, vs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	content := snapshotapi.ContentName(vs.UID)
	var id string
	stacktest.Eventually(t, "snapshot ready", func() string {
		s, err := snaps.SnapshotV1().VolumeSnapshots(ns).Get(ctx, "snap", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if s.Status == nil || !ptr.Deref(s.Status.ReadyToUse, false) || s.Status.RestoreSize == nil || s.Status.CreationTime == nil {
			return fmt.Sprintf("status %+v", s.Status)
		}
		c, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, content, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		id = ptr.Deref(c.Status.SnapshotHandle, "")
		return ""
	}, alive)
	if _, snap, err := pool.FindSnapshot(ctx, hostpath.DriverName, id, nil); err != nil || snap == nil {
		t.Fatalf("the driver's snapshot %q of a ready VolumeSnapshot: %v, %v", id, snap, err)
	}

	if err := snaps.SnapshotV1().VolumeSnapshots(ns).Delete(ctx, "snap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "snapshot and content gone", func() string {
		_, errS := snaps.SnapshotV1().VolumeSnapshots(ns).Get(ctx, "snap", metav1.GetOptions{})
		_, errC := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, content, metav1.GetOptions{})
		if apierrors.IsNotFound(errS) && apierrors.IsNotFound(errC) {
			return ""
		}
		return fmt.Sprintf("snapshot: %v, content: %v", errS, errC)
	}, alive)
	if _, snap, err := pool.FindSnapshot(ctx, hostpath.DriverName, id, nil); snap != nil || (err != nil && !errors.Is(err, csi.ErrSnapshotNotFound)) {
		t.Fatalf("the driver's snapshot %s after its VolumeSnapshot was deleted: %v, %v; want none", id, snap, err)
	}
}
