package checkup

import (
	"context"
	"fmt"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/invariants"
)

// SnapshotObjects are the cluster's VolumeSnapshots, contents and classes.
// Installed is false when the snapshot API is not served (the lists are
// then empty).
type SnapshotObjects struct {
	Installed bool
	Snapshots []snapv1.VolumeSnapshot
	Contents  []snapv1.VolumeSnapshotContent
	Classes   []snapv1.VolumeSnapshotClass
}

// ReadSnapshots lists every content, every VolumeSnapshot (of namespace,
// every namespace for metav1.NamespaceAll) and every class.
func ReadSnapshots(ctx context.Context, snaps snapclient.Interface, namespace string) (SnapshotObjects, error) {
	var out SnapshotObjects
	api := snaps.SnapshotV1()
	contents, err := api.VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
	if inspect.NotInstalled(err) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("list volume snapshot contents: %w", err)
	}
	// After the contents: a snapshot made meanwhile has its content made
	// after it, so no content is taken for one whose snapshot is gone.
	vs, err := api.VolumeSnapshots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, fmt.Errorf("list volume snapshots: %w", err)
	}
	classes, err := api.VolumeSnapshotClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, fmt.Errorf("list volume snapshot classes: %w", err)
	}
	return SnapshotObjects{Installed: true, Snapshots: vs.Items, Contents: contents.Items, Classes: classes.Items}, nil
}

// ReadInvariantsWith is ReadInvariants with the snapshot clientset given
// (nil: the snapshot promises are not checked).
func ReadInvariantsWith(ctx context.Context, client kubernetes.Interface, snaps snapclient.Interface, endpoints []string) (invariants.State, error) {
	s, err := readInvariantObjects(ctx, client)
	if err != nil {
		return s, err
	}
	if snaps != nil {
		objs, err := ReadSnapshots(ctx, snaps, metav1.NamespaceAll)
		if err != nil {
			return s, err
		}
		s.Snapshots, s.Contents, s.SnapshotsRead = objs.Snapshots, objs.Contents, true
		if s.GroupContents, err = readGroupContents(ctx, snaps); err != nil {
			return s, err
		}
	}
	listings, err := ListVolumes(ctx, endpoints)
	if err != nil {
		return s, err
	}
	for _, l := range listings {
		s.Backends = append(s.Backends, invariantBackend(l))
	}
	return s, nil
}

// readGroupSnapshots lists every VolumeGroupSnapshot; none when the group
// snapshot API is not served.
func readGroupSnapshots(ctx context.Context, snaps snapclient.Interface) ([]groupv1.VolumeGroupSnapshot, error) {
	list, err := snaps.GroupsnapshotV1().VolumeGroupSnapshots(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if inspect.NotInstalled(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list volume group snapshots: %w", err)
	}
	return list.Items, nil
}

// readGroupContents lists every VolumeGroupSnapshotContent; none when the
// group snapshot API is not served.
func readGroupContents(ctx context.Context, snaps snapclient.Interface) ([]groupv1.VolumeGroupSnapshotContent, error) {
	list, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().List(ctx, metav1.ListOptions{})
	if inspect.NotInstalled(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list volume group snapshot contents: %w", err)
	}
	return list.Items, nil
}
