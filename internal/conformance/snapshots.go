package conformance

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deleteSnapshots deletes the namespace's group snapshots and snapshots,
// when the lab has the snapshot API, and waits until they are gone: a
// snapshot holds its source claim's deletion.
func (s *Session) deleteSnapshots(ctx context.Context) error {
	if s.Lab.Snapshots == nil || (s.Lab.SnapshotClass == "" && s.Lab.GroupSnapshotClass == "") {
		return nil
	}
	var errs []error
	if s.Lab.GroupSnapshotClass != "" {
		groups := s.Lab.Snapshots.GroupsnapshotV1().VolumeGroupSnapshots(s.Namespace)
		errs = append(errs, groups.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
		errs = append(errs, waitFor(ctx, "VolumeGroupSnapshot", s.Namespace, "*", "the group snapshots to be gone", func(ctx context.Context) (string, error) {
			l, err := groups.List(ctx, metav1.ListOptions{})
			if err != nil || len(l.Items) == 0 {
				return "", err
			}
			return l.Items[0].Name + " is still there", nil
		}))
	}
	snaps := s.Lab.Snapshots.SnapshotV1().VolumeSnapshots(s.Namespace)
	errs = append(errs, snaps.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	errs = append(errs, waitFor(ctx, "VolumeSnapshot", s.Namespace, "*", "the snapshots to be gone", func(ctx context.Context) (string, error) {
		l, err := snaps.List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) == 0 {
			return "", err
		}
		return l.Items[0].Name + " is still there", nil
	}))
	return errors.Join(errs...)
}
