package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/explain"
)

// NoGroupSnapshotAPI is what explain says when the cluster serves no
// groupsnapshot.storage.k8s.io API.
const NoGroupSnapshotAPI = "group snapshot API not installed"

// ErrNoGroupSnapshotAPI is Report's error for a group snapshot kind on a
// cluster without the group snapshot API.
var ErrNoGroupSnapshotAPI = errors.New(NoGroupSnapshotAPI)

// ReadGroupFacts adds to f every VolumeGroupSnapshot of namespace (every
// namespace for metav1.NamespaceAll), every group content and every group
// class; ErrNoGroupSnapshotAPI when the cluster does not serve them.
func ReadGroupFacts(ctx context.Context, snaps snapclient.Interface, namespace string, f *explain.Facts) error {
	api := snaps.GroupsnapshotV1()
	contents, err := api.VolumeGroupSnapshotContents().List(ctx, metav1.ListOptions{})
	if NotInstalled(err) {
		return ErrNoGroupSnapshotAPI
	}
	if err != nil {
		return fmt.Errorf("list volume group snapshot contents: %w", err)
	}
	groups, err := api.VolumeGroupSnapshots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list volume group snapshots: %w", err)
	}
	classes, err := api.VolumeGroupSnapshotClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list volume group snapshot classes: %w", err)
	}
	f.GroupContents, f.GroupSnapshots, f.GroupClasses = pointers(contents.Items), pointers(groups.Items), pointers(classes.Items)
	return nil
}

// explainGroup reads what the group loop reads about a group: the claims
// and VolumeSnapshots of the group's own namespace only, every volume and
// content, and the group API's objects.
func explainGroup(ctx context.Context, c Clients, namespace, name string) (explain.GroupReport, error) {
	if c.Snapshots == nil {
		return explain.GroupReport{}, ErrNoGroupSnapshotAPI
	}
	if err := Installed(ctx, c.Snapshots); err != nil {
		return explain.GroupReport{}, err
	}
	g, err := c.Snapshots.GroupsnapshotV1().VolumeGroupSnapshots(namespace).Get(ctx, name, metav1.GetOptions{})
	if NotInstalled(err) {
		return explain.GroupReport{}, ErrNoGroupSnapshotAPI
	}
	if apierrors.IsNotFound(err) {
		return explain.GroupReport{}, fmt.Errorf("volumegroupsnapshot %s/%s not found", namespace, name)
	}
	if err != nil {
		return explain.GroupReport{}, fmt.Errorf("read volume group snapshot: %w", err)
	}
	f, err := ReadFacts(ctx, c.Kube, namespace)
	if err != nil {
		return explain.GroupReport{}, err
	}
	if err := ReadSnapshotFacts(ctx, c.Snapshots, namespace, f); err != nil {
		return explain.GroupReport{}, err
	}
	if err := ReadGroupFacts(ctx, c.Snapshots, namespace, f); err != nil {
		return explain.GroupReport{}, err
	}
	if err := Snapshotters(ctx, c.Kube, f, explain.GroupDriver(g, f)); err != nil {
		return explain.GroupReport{}, err
	}
	return explain.Group(g, f), nil
}

// explainGroupContent reads a group content, the groups it may be bound
// to, and their members' objects.
func explainGroupContent(ctx context.Context, c Clients, name string) (explain.GroupContentReport, error) {
	if c.Snapshots == nil {
		return explain.GroupContentReport{}, ErrNoGroupSnapshotAPI
	}
	if err := Installed(ctx, c.Snapshots); err != nil {
		return explain.GroupContentReport{}, err
	}
	content, err := c.Snapshots.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, name, metav1.GetOptions{})
	if NotInstalled(err) {
		return explain.GroupContentReport{}, ErrNoGroupSnapshotAPI
	}
	if apierrors.IsNotFound(err) {
		return explain.GroupContentReport{}, fmt.Errorf("volumegroupsnapshotcontent %s not found", name)
	}
	if err != nil {
		return explain.GroupContentReport{}, fmt.Errorf("read volume group snapshot content: %w", err)
	}
	f := &explain.Facts{Now: time.Now()}
	if err := ReadSnapshotFacts(ctx, c.Snapshots, metav1.NamespaceAll, f); err != nil {
		return explain.GroupContentReport{}, err
	}
	if err := ReadGroupFacts(ctx, c.Snapshots, metav1.NamespaceAll, f); err != nil {
		return explain.GroupContentReport{}, err
	}
	if err := Snapshotters(ctx, c.Kube, f, content.Spec.Driver); err != nil {
		return explain.GroupContentReport{}, err
	}
	return explain.GroupContent(content, f), nil
}
