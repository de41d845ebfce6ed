package rbac

import (
	"context"
	"fmt"
	"testing"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// A user bound to the built-in edit role in a namespace takes, reads,
// changes and deletes VolumeSnapshots and VolumeGroupSnapshots there
// (deploy/'s rules, aggregated into edit by the real
// kube-controller-manager), and nowhere else; writes no status; creates
// no VolumeSnapshotContent, the one object that could point a snapshot at
// another tenant's data; reads no class. A user bound to view reads them
// and writes nothing.
func TestTenantsSnapshotThroughEditAndView(t *testing.T) {
	ctx := context.Background()
	admin := bed.stack.CP.Client
	ns, other := stacktest.Namespace(t), "default"
	bind := func(role, user string) {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + role, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	editor, viewer := "tenant-editor-"+ns, "tenant-viewer-"+ns
	bind("edit", editor)
	bind("view", viewer)
	edit, view := snapshotsAs(t, editor), snapshotsAs(t, viewer)

	snapshot := func(namespace string) *snapv1.VolumeSnapshot {
		return &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: namespace},
			Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}}}
	}
	// The aggregation controller copies the rules into edit soon after
	// deploy/ is applied.
	stacktest.Eventually(t, "edit lets a tenant create a VolumeSnapshot", func() string {
		if _, err := edit.SnapshotV1().VolumeSnapshots(ns).Create(ctx, snapshot(ns), metav1.CreateOptions{DryRun: dryRun}); err != nil {
			return err.Error()
		}
		return ""
	}, bed.stack.EndedEarly)

	// The editor's whole round in its namespace, for real: no loop runs
	// here (each role's run only in the lifecycle), so nothing holds them.
	vs, err := edit.SnapshotV1().VolumeSnapshots(ns).Create(ctx, snapshot(ns), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the editor's VolumeSnapshot: %v", err)
	}
	group := &groupv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns},
		Spec: groupv1.VolumeGroupSnapshotSpec{Source: groupv1.VolumeGroupSnapshotSource{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}
	if _, err := edit.GroupsnapshotV1().VolumeGroupSnapshots(ns).Create(ctx, group, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the editor's VolumeGroupSnapshot: %v", err)
	}
	allowed := map[string]error{}
	allowed["list VolumeSnapshots"] = errOf(edit.SnapshotV1().VolumeSnapshots(ns).List(ctx, metav1.ListOptions{}))
	vs.Labels = map[string]string{"tenant": "edited"}
	vs, err = edit.SnapshotV1().VolumeSnapshots(ns).Update(ctx, vs, metav1.UpdateOptions{})
	allowed["update a VolumeSnapshot"] = err
	allowed["list VolumeGroupSnapshots"] = errOf(edit.GroupsnapshotV1().VolumeGroupSnapshots(ns).List(ctx, metav1.ListOptions{}))
	allowed["view: get a VolumeSnapshot"] = errOf(view.SnapshotV1().VolumeSnapshots(ns).Get(ctx, "tenant", metav1.GetOptions{}))
	allowed["view: list VolumeGroupSnapshots"] = errOf(view.GroupsnapshotV1().VolumeGroupSnapshots(ns).List(ctx, metav1.ListOptions{}))
	for what, err := range allowed {
		if err != nil {
			t.Errorf("%s in the tenant's namespace: %v, want allowed", what, err)
		}
	}

	content := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + ns},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Kind: "VolumeSnapshot", Namespace: ns, Name: "tenant"},
			DeletionPolicy:    snapv1.VolumeSnapshotContentRetain, Driver: hostpath.DriverName,
			Source: snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To("another-tenants-snapshot")}}}
	vs.Status = &snapv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), BoundVolumeSnapshotContentName: ptr.To(content.Name)}
	forbidden := map[string]error{
		"edit: create a VolumeSnapshot in another namespace": errOf(edit.SnapshotV1().VolumeSnapshots(other).Create(ctx, snapshot(other), metav1.CreateOptions{DryRun: dryRun})),
		"edit: create a VolumeSnapshotContent":               errOf(edit.SnapshotV1().VolumeSnapshotContents().Create(ctx, content, metav1.CreateOptions{DryRun: dryRun})),
		"edit: list VolumeSnapshotContents":                  errOf(edit.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{})),
		"edit: list VolumeGroupSnapshotContents":             errOf(edit.GroupsnapshotV1().VolumeGroupSnapshotContents().List(ctx, metav1.ListOptions{})),
		"edit: update a VolumeSnapshot's status":             errOf(edit.SnapshotV1().VolumeSnapshots(ns).UpdateStatus(ctx, vs, metav1.UpdateOptions{DryRun: dryRun})),
		"edit: list VolumeSnapshotClasses":                   errOf(edit.SnapshotV1().VolumeSnapshotClasses().List(ctx, metav1.ListOptions{})),
		"edit: list VolumeGroupSnapshotClasses":              errOf(edit.GroupsnapshotV1().VolumeGroupSnapshotClasses().List(ctx, metav1.ListOptions{})),
		"view: create a VolumeSnapshot":                      errOf(view.SnapshotV1().VolumeSnapshots(ns).Create(ctx, snapshot(ns), metav1.CreateOptions{DryRun: dryRun})),
		"view: delete a VolumeGroupSnapshot":                 view.GroupsnapshotV1().VolumeGroupSnapshots(ns).Delete(ctx, "tenant", metav1.DeleteOptions{DryRun: dryRun}),
	}
	for what, err := range forbidden {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want 403", what, err)
		}
	}

	for what, err := range map[string]error{
		"delete the VolumeSnapshot":      edit.SnapshotV1().VolumeSnapshots(ns).Delete(ctx, "tenant", metav1.DeleteOptions{}),
		"delete the VolumeGroupSnapshot": edit.GroupsnapshotV1().VolumeGroupSnapshots(ns).Delete(ctx, "tenant", metav1.DeleteOptions{}),
	} {
		if err != nil {
			t.Errorf("the editor may not %s: %v", what, err)
		}
	}
}

// snapshotsAs is a snapshot API client acting as user (impersonated by
// the administrator: the API server authorizes the user, with the
// groups every authenticated user has).
func snapshotsAs(t *testing.T, user string) snapclient.Interface {
	t.Helper()
	rc := rest.CopyConfig(bed.stack.CP.RESTConfig)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	client, err := snapclient.NewForConfig(rc)
	if err != nil {
		t.Fatal(fmt.Errorf("client for %s: %w", user, err))
	}
	return client
}

// errOf drops an API call's object.
func errOf[T any](_ T, err error) error { return err }
