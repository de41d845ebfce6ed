package conformance

import (
	"context"
	"fmt"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// groupLabel picks the group scenario's claims.
var groupLabel = map[string]string{"conformance.volplane.io/group": "db"}

// groupSnapshot: two claims with a label, used by one pod (so that a
// driver whose volumes live on nodes puts both on the pod's node, through
// the WaitForFirstConsumer class when there is one), are snapshotted
// together by a VolumeGroupSnapshot selecting the label: it becomes ready
// and so does a member snapshot per claim.
func groupSnapshot() Scenario {
	return Scenario{Name: "group-snapshot", Applies: func(l *Lab) (bool, string) {
		switch {
		case !l.Controller.GroupSnapshot:
			return false, "the driver cannot snapshot groups (no GroupController CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT)"
		case l.GroupSnapshotClass == "" || l.Snapshots == nil:
			return false, "no VolumeGroupSnapshotClass of the driver"
		}
		return true, ""
	}, Run: func(s *Session) error {
		claims := []string{"db-0", "db-1"}
		return s.Steps(
			Step{"create two labelled claims", func(ctx context.Context) error {
				class := s.Lab.WaitClass
				if class == "" {
					class = s.Lab.ImmediateClass
				}
				for _, c := range claims {
					if err := s.createClaim(ctx, s.newClaim(c, class, labelled(groupLabel))); err != nil {
						return err
					}
				}
				return nil
			}},
			Step{"a pod using both runs", func(ctx context.Context) error {
				p := s.newPod("app", "", claims[0], false)
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "more", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claims[1]}}})
				p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "more", MountPath: "/more"})
				_, err := s.startPod(ctx, p)
				return err
			}},
			Step{"snapshot the claims as a group", func(ctx context.Context) error {
				g := &groupv1.VolumeGroupSnapshot{
					ObjectMeta: metav1.ObjectMeta{Name: "group", Namespace: s.Namespace},
					Spec: groupv1.VolumeGroupSnapshotSpec{
						Source:                       groupv1.VolumeGroupSnapshotSource{Selector: &metav1.LabelSelector{MatchLabels: groupLabel}},
						VolumeGroupSnapshotClassName: ptr.To(s.Lab.GroupSnapshotClass),
					},
				}
				_, err := s.Lab.Snapshots.GroupsnapshotV1().VolumeGroupSnapshots(s.Namespace).Create(ctx, g, metav1.CreateOptions{})
				return err
			}},
			Step{"the group snapshot is ready to use", func(ctx context.Context) error { return s.groupReady(ctx, "group") }},
			Step{"a member snapshot per claim is ready to use", func(ctx context.Context) error {
				return s.membersReady(ctx, "group", len(claims))
			}},
		)
	}}
}

// groupReady waits until the VolumeGroupSnapshot is ready to use.
func (s *Session) groupReady(ctx context.Context, name string) error {
	return waitFor(ctx, "VolumeGroupSnapshot", s.Namespace, name, "group snapshot "+name+" to be ready to use", func(ctx context.Context) (string, error) {
		g, err := s.Lab.Snapshots.GroupsnapshotV1().VolumeGroupSnapshots(s.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		switch st := g.Status; {
		case st == nil:
			return "no status yet", nil
		case st.Error != nil && st.Error.Message != nil:
			return *st.Error.Message, nil
		case !ptr.Deref(st.ReadyToUse, false):
			return "not ready to use", nil
		}
		return "", nil
	})
}

// membersReady waits until the group has n member snapshots (snapshots
// of the namespace whose status names the group), each ready to use.
func (s *Session) membersReady(ctx context.Context, group string, n int) error {
	return waitFor(ctx, "VolumeGroupSnapshot", s.Namespace, group, fmt.Sprintf("%d ready member snapshots of %s", n, group), func(ctx context.Context) (string, error) {
		l, err := s.Lab.Snapshots.SnapshotV1().VolumeSnapshots(s.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error(), nil
		}
		members := 0
		for i := range l.Items {
			vs := &l.Items[i]
			if vs.Status == nil || ptr.Deref(vs.Status.VolumeGroupSnapshotName, "") != group {
				continue
			}
			if why := snapshotNotReady(vs); why != "" {
				return why, nil
			}
			members++
		}
		if members != n {
			return fmt.Sprintf("%d member snapshots, want %d", members, n), nil
		}
		return "", nil
	})
}
