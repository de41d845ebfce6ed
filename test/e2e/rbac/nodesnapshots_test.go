package rbac

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
)

// The node role writes the snapshot API only as its snapshotter and
// provisioner do (deploy/'s admission policy; RBAC cannot say which
// content): the finalizer, annotations and status of contents of the
// node-local driver that are its node's (labelled managed-by it, as the
// snapshot loop labels a dynamic content and an administrator a
// pre-provisioned one) or a group member's (which the group loops leave
// unlabelled), never another node's, an unlabelled one's or another
// driver's, never a content's spec or label; on a VolumeSnapshot, only the
// provisioner's finalizer. A token that names no node writes nothing.
func TestNodeRoleWritesOnlyItsNodesSnapshots(t *testing.T) {
	ctx := context.Background()
	node := bed.stack.CP.Nodes[0]
	ns := stacktest.Namespace(t)
	admin, err := snapclient.NewForConfig(bed.stack.CP.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	content := func(name, driver, owner string) *snapv1.VolumeSnapshotContent {
		c := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + ns},
			Spec: snapv1.VolumeSnapshotContentSpec{
				VolumeSnapshotRef: corev1.ObjectReference{Kind: snapshotapi.KindSnapshot, APIVersion: snapshotapi.Group + "/v1", Namespace: ns, Name: name},
				DeletionPolicy:    snapv1.VolumeSnapshotContentRetain, Driver: driver,
				Source: snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To("handle-" + name)}}}
		if owner != "" {
			c.Labels = map[string]string{snapshotapi.ManagedByLabel: owner}
		}
		return c
	}
	own, member := content("own", hostpath.DriverName, node), content("member", hostpath.DriverName, "")
	member.Annotations = map[string]string{snapshotapi.GroupHandleAnnotation: "group-handle"}
	ownDynamic := content("own-dynamic", hostpath.DriverName, node)
	ownDynamic.Spec.Source = snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To("volume-own-dynamic")}
	unlabelledDynamic := content("unlabelled-dynamic", hostpath.DriverName, "")
	unlabelledDynamic.Spec.Source = ownDynamic.Spec.Source
	others := []*snapv1.VolumeSnapshotContent{
		content("other-node", hostpath.DriverName, "elsewhere"),
		content("other-driver", hostpath.NetworkDriverName, node),
		content("unowned", hostpath.DriverName, ""), // pre-provisioned, not labelled by its administrator
		unlabelledDynamic,
	}
	contents := admin.SnapshotV1().VolumeSnapshotContents()
	for _, c := range append([]*snapv1.VolumeSnapshotContent{own, ownDynamic, member}, others...) {
		if _, err := contents.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = contents.Delete(context.Background(), c.Name, metav1.DeleteOptions{}) })
	}
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "restored-from", Namespace: ns},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To(own.Name)}}}
	if _, err := admin.SnapshotV1().VolumeSnapshots(ns).Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	onNode, noNode := snapshotsOf(t, ctx, node), snapshotsOf(t, ctx, "")

	// What the snapshotter writes of a content, each a dry run.
	serve := func(client snapclient.Interface, name string) map[string]error {
		c := client.SnapshotV1().VolumeSnapshotContents()
		patch := func(body string, sub ...string) error {
			_, err := c.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{DryRun: dryRun}, sub...)
			return err
		}
		return map[string]error{
			"annotate":     patch(fmt.Sprintf(`{"metadata":{"annotations":{%q:"yes"}}}`, snapshotapi.BeingCreated)),
			"finalize":     patch(`{"metadata":{"finalizers":null}}`),
			"write status": patch(`{"status":{"snapshotHandle":"another","readyToUse":true}}`, "status"),
		}
	}
	stacktest.Eventually(t, "the node role refused another node's content", func() string {
		if err := serve(onNode, others[0].Name)["annotate"]; !apierrors.IsForbidden(err) {
			return fmt.Sprintf("annotate: %v", err)
		}
		return ""
	}, bed.stack.EndedEarly)
	for _, c := range []*snapv1.VolumeSnapshotContent{own, ownDynamic, member} {
		for what, err := range serve(onNode, c.Name) {
			if err != nil {
				t.Errorf("the node role may not %s content %s: %v", what, c.Name, err)
			}
		}
	}
	for _, c := range others {
		for what, err := range serve(onNode, c.Name) {
			if !apierrors.IsForbidden(err) {
				t.Errorf("the node role's %s of content %s from %s: %v, want 403", what, c.Name, node, err)
			}
		}
	}
	for what, err := range serve(noNode, own.Name) {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the node role's %s with a token of no node: %v, want 403", what, err)
		}
	}
	// Never a content's spec or its owner.
	for what, body := range map[string]string{
		"delete the backend snapshot with the content": `{"spec":{"deletionPolicy":"Delete"}}`,
		"relabel":  fmt.Sprintf(`{"metadata":{"labels":{%q:"elsewhere"}}}`, snapshotapi.ManagedByLabel),
		"rebind":   `{"spec":{"volumeSnapshotRef":{"namespace":"default"}}}`,
		"unlabel":  fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, snapshotapi.ManagedByLabel),
		"re-drive": fmt.Sprintf(`{"spec":{"driver":%q}}`, hostpath.NetworkDriverName),
	} {
		_, err := onNode.SnapshotV1().VolumeSnapshotContents().Patch(ctx, own.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{DryRun: dryRun})
		if !apierrors.IsForbidden(err) {
			t.Errorf("the node role may %s its own content: %v, want 403", what, err)
		}
	}
	// A VolumeSnapshot: its provisioner's finalizer, nothing else.
	snaps := onNode.SnapshotV1().VolumeSnapshots(ns)
	finalizers := func(fins ...string) string {
		data, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fins}})
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if _, err := snaps.Patch(ctx, vs.Name, types.MergePatchType, []byte(finalizers(snapshotapi.ProvisionerSourceFinalizer)), metav1.PatchOptions{DryRun: dryRun}); err != nil {
		t.Errorf("the node role may not hold a VolumeSnapshot with its finalizer: %v", err)
	}
	for what, body := range map[string]string{
		"add another finalizer": finalizers(snapshotapi.ProvisionerSourceFinalizer, snapshotapi.AsSourceFinalizer),
		"label":                 `{"metadata":{"labels":{"a":"b"}}}`,
		"annotate":              `{"metadata":{"annotations":{"a":"b"}}}`,
		"change the source":     `{"spec":{"volumeSnapshotClassName":"other"}}`,
	} {
		if _, err := snaps.Patch(ctx, vs.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{DryRun: dryRun}); !apierrors.IsForbidden(err) {
			t.Errorf("the node role may %s on a VolumeSnapshot: %v, want 403", what, err)
		}
	}
}

// snapshotsOf is a snapshot API client with the node role's token, bound
// to node unless it is "".
func snapshotsOf(t *testing.T, ctx context.Context, node string) snapclient.Interface {
	t.Helper()
	rc, err := restConfig(ctx, bed.stack, "volplane-node", node, newRequestLog())
	if err != nil {
		t.Fatal(err)
	}
	client, err := snapclient.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
