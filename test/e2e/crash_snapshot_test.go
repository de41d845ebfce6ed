package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
)

// A snapshot loop that dies after any of its writes for a new snapshot
// (the snapshot's finalizers, the claim's finalizer, the content, the
// snapshot's status, the content's finalizer) leaves a state the next
// loop completes: one content, snapcontent-<uid>, bound both ways and
// ready, the claim released, nothing made twice. The test plays the
// snapshotter (the content's status).
func TestSnapshotInterruptedAfterEachWriteIsCompletedByTheNextLoop(t *testing.T) {
	cp := stacktest.ControlPlane(t)
	if err := bundle.RegisterSnapshots(t.Context(), cp.RESTConfig); err != nil {
		t.Fatal(err)
	}
	snaps, err := snapclient.NewForConfig(cp.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	for writes := 1; writes <= 5; writes++ {
		t.Run(fmt.Sprintf("after write %d", writes), func(t *testing.T) {
			e := newEnv(t)
			pv := e.createPV(e.pv("src", "1Gi", pvCSI(hostpath.DriverName)))
			e.createClaim(e.claim("data", "1Gi"))
			e.waitBound("data", pv.Name)
			vs, err := snaps.SnapshotV1().VolumeSnapshots(e.ns).Create(e.ctx, &snapv1.VolumeSnapshot{
				ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: e.ns},
				Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")},
					VolumeSnapshotClassName: ptr.To(bundle.SnapshotClass)},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			content := snapshotapi.ContentName(vs.UID)
			t.Cleanup(func() { removeSnapshot(t, snaps, e.ns, "snap", content) })

			crashing := &writeBudget{allowed: int64(writes), paths: []string{
				"/namespaces/" + e.ns + "/volumesnapshots/snap",
				"/namespaces/" + e.ns + "/persistentvolumeclaims/data",
				"/volumesnapshotcontents",
				"/volumesnapshotcontents/" + content,
			}}
			first := startSnapshotLoop(crashing.config(cp.RESTConfig))
			e.eventually("the crashing snapshot loop used its write budget", func() string {
				readyContent(t, snaps, content)
				if crashing.refused.Load() == 0 {
					return fmt.Sprintf("%d writes done, none refused yet", crashing.done.Load())
				}
				return ""
			})
			if err := first.Stop(); err != nil {
				t.Fatalf("crashing snapshot loop: %v", err)
			}

			second := startSnapshotLoop(cp.RESTConfig)
			defer second.Stop()
			e.eventually("snapshot ready, bound to "+content, func() string {
				readyContent(t, snaps, content)
				got, err := snaps.SnapshotV1().VolumeSnapshots(e.ns).Get(e.ctx, "snap", metav1.GetOptions{})
				if err != nil {
					return err.Error()
				}
				st := got.Status
				if st == nil || ptr.Deref(st.BoundVolumeSnapshotContentName, "") != content || !ptr.Deref(st.ReadyToUse, false) {
					return fmt.Sprintf("status %+v", st)
				}
				for _, f := range []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer} {
					if !slices.Contains(got.Finalizers, f) {
						return fmt.Sprintf("finalizers %v lack %s", got.Finalizers, f)
					}
				}
				if c := e.getClaim("data"); slices.Contains(c.Finalizers, snapshotapi.ClaimFinalizer) {
					return fmt.Sprintf("claim still held: %v", c.Finalizers)
				}
				return ""
			})
			all, err := snaps.SnapshotV1().VolumeSnapshotContents().List(e.ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var made []string
			for _, c := range all.Items {
				if c.Spec.VolumeSnapshotRef.UID == vs.UID {
					made = append(made, c.Name)
					if !slices.Contains(c.Finalizers, snapshotapi.ContentFinalizer) {
						t.Errorf("content %s lacks %s: %v", c.Name, snapshotapi.ContentFinalizer, c.Finalizers)
					}
				}
			}
			if !slices.Equal(made, []string{content}) {
				t.Errorf("contents of the snapshot: %v, want only %s", made, content)
			}
		})
	}
}

func startSnapshotLoop(rc *rest.Config) *stacktest.Loops {
	return stacktest.StartLoops(manager.Config{REST: rc, Controllers: []string{manager.Snapshot}, Workers: 2, ResyncPeriod: 2 * time.Second})
}

// readyContent plays the snapshotter: a content that exists without a
// handle gets one, ready, as CreateSnapshot would give it.
func readyContent(t *testing.T, snaps snapclient.Interface, name string) {
	c, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil || (c.Status != nil && c.Status.SnapshotHandle != nil) {
		return
	}
	size := resource.MustParse("1Gi")
	patch := fmt.Appendf(nil, `{"status":{"snapshotHandle":"handle-%s","readyToUse":true,"restoreSize":%d,"creationTime":%d}}`,
		name, size.Value(), time.Now().UnixNano())
	_, _ = snaps.SnapshotV1().VolumeSnapshotContents().Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
}

// removeSnapshot removes the snapshot and its content, finalizers and all
// (no snapshotter runs here to release them).
func removeSnapshot(t *testing.T, snaps snapclient.Interface, ns, name, content string) {
	ctx := t.Context()
	clear := []byte(`{"metadata":{"finalizers":null}}`)
	_, _ = snaps.SnapshotV1().VolumeSnapshots(ns).Patch(ctx, name, types.MergePatchType, clear, metav1.PatchOptions{})
	_ = snaps.SnapshotV1().VolumeSnapshots(ns).Delete(ctx, name, metav1.DeleteOptions{})
	_, _ = snaps.SnapshotV1().VolumeSnapshotContents().Patch(ctx, content, types.MergePatchType, clear, metav1.PatchOptions{})
	_ = snaps.SnapshotV1().VolumeSnapshotContents().Delete(ctx, content, metav1.DeleteOptions{})
}
