package inspect_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/snapshotapi"
)

func restoringClaim(ns string, ref *string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "restore"},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast"),
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			DataSourceRef: &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot,
				Name: "snap", Namespace: ref}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}}
}

// A claim's report reads its snapshot where the provisioner would: in the
// claim's own namespace, and nothing at all for a dataSourceRef naming
// another namespace, which is reported refused.
func TestExplainClaimReadsOnlyItsOwnNamespacesSnapshot(t *testing.T) {
	ctx := context.Background()
	victim := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "victim", Name: "snap"},
		Status: &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To("theirs"), ReadyToUse: ptr.To(true)}}
	snaps := snapfake.NewSimpleClientset(victim)
	kube := fake.NewClientset(restoringClaim("ns", ptr.To("victim")))
	r, err := inspect.ReportWith(ctx, inspect.Clients{Kube: kube, Snapshots: snaps}, "pvc", "ns/restore", "")
	if err != nil {
		t.Fatal(err)
	}
	rs := r.(explain.ClaimReport).RestoresFrom
	if rs == nil || rs.State != explain.RestoreRefused || rs.Content != "" || rs.Ready != nil {
		t.Errorf("restores from %+v", rs)
	}
	for _, a := range snaps.Actions() {
		t.Errorf("read the snapshot API for a refused source: %s %s in %q", a.GetVerb(), a.GetResource().Resource, a.GetNamespace())
	}

	own := victim.DeepCopy()
	own.Namespace = "ns"
	content := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}
	snaps = snapfake.NewSimpleClientset(victim, own, content)
	fast := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "csi.example.com"}
	kube = fake.NewClientset(restoringClaim("ns", nil), fast)
	r, err = inspect.ReportWith(ctx, inspect.Clients{Kube: kube, Snapshots: snaps}, "pvc", "ns/restore", "")
	if err != nil {
		t.Fatal(err)
	}
	if rs := r.(explain.ClaimReport).RestoresFrom; rs == nil || rs.Content != "theirs" || rs.Namespace != "ns" ||
		rs.State != explain.RestoreRefused || !strings.Contains(rs.Summary, "bound to a different snapshot") {
		t.Errorf("restores from %+v", rs)
	}
	for _, a := range snaps.Actions() {
		if a.GetVerb() != "get" || (a.GetResource().Resource == "volumesnapshots" && a.GetNamespace() != "ns") {
			t.Errorf("read %s %s in %q", a.GetVerb(), a.GetResource().Resource, a.GetNamespace())
		}
	}

	// Without the snapshot API, the restore is not checked, not failed.
	r, err = inspect.ReportWith(ctx, inspect.Clients{Kube: kube, Snapshots: notServed()}, "pvc", "ns/restore", "")
	if err != nil {
		t.Fatal(err)
	}
	if rs := r.(explain.ClaimReport).RestoresFrom; rs == nil || rs.State != explain.RestoreUnchecked {
		t.Errorf("restores from %+v", rs)
	}
}

func TestExplainSaysTheGroupSnapshotAPIIsNotInstalled(t *testing.T) {
	c := inspect.Clients{Kube: fake.NewClientset(), Snapshots: notServed()}
	for _, args := range [][2]string{{"vgs", "ns/g"}, {"volumegroupsnapshotcontent", "groupsnapcontent-1"}} {
		err := inspect.ExplainWith(context.Background(), c, args[0], args[1], "default", "table", io.Discard)
		if !errors.Is(err, inspect.ErrNoSnapshotAPI) {
			t.Errorf("explain %s %s: %v", args[0], args[1], err)
		}
	}
	c.Snapshots = snapfake.NewSimpleClientset()
	if err := inspect.ExplainWith(context.Background(), c, "vgs", "ns/g", "", "table", io.Discard); err == nil || err.Error() != "volumegroupsnapshot ns/g not found" {
		t.Errorf("a group that does not exist: %v", err)
	}
}
