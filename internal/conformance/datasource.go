package conformance

import (
	"context"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// cloneClaim: a claim whose data source is another claim is provisioned
// as a copy of it: bound, and a pod reads in it what a pod wrote in the
// source.
func cloneClaim() Scenario {
	return Scenario{Name: "clone", Applies: func(l *Lab) (bool, string) {
		if !l.Controller.Clone {
			return false, "the driver cannot clone volumes (no CLONE_VOLUME)"
		}
		return true, ""
	}, Run: func(s *Session) error {
		return s.Steps(append(s.writtenSource(),
			Step{"create a claim cloning it", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("copy", s.Lab.ImmediateClass, fromClaim("source")))
			}},
			Step{"the clone binds, and a pod reads the file in it", func(ctx context.Context) error { return s.readsBack(ctx, "copy") }},
		)...)
	}}
}

// snapshotRestore: a VolumeSnapshot of a claim becomes ready to use; a
// claim restored from it binds and a pod reads in it what a pod wrote in
// the source before the snapshot.
func snapshotRestore() Scenario {
	return Scenario{Name: "snapshot-restore", Applies: func(l *Lab) (bool, string) {
		switch {
		case !l.Controller.Snapshot:
			return false, "the driver cannot snapshot (no CREATE_DELETE_SNAPSHOT)"
		case l.SnapshotClass == "" || l.Snapshots == nil:
			return false, "no VolumeSnapshotClass of the driver"
		}
		return true, ""
	}, Run: func(s *Session) error {
		return s.Steps(append(s.writtenSource(),
			Step{"snapshot the claim", func(ctx context.Context) error {
				vs := &snapv1.VolumeSnapshot{
					ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: s.Namespace},
					Spec: snapv1.VolumeSnapshotSpec{
						Source:                  snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("source")},
						VolumeSnapshotClassName: ptr.To(s.Lab.SnapshotClass),
					},
				}
				_, err := s.Lab.Snapshots.SnapshotV1().VolumeSnapshots(s.Namespace).Create(ctx, vs, metav1.CreateOptions{})
				return err
			}},
			Step{"the snapshot is ready to use", func(ctx context.Context) error { return s.snapshotReady(ctx, "snap") }},
			Step{"create a claim restoring it", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("restored", s.Lab.ImmediateClass, fromSnapshot("snap")))
			}},
			Step{"the restored claim binds, and a pod reads the file in it", func(ctx context.Context) error {
				return s.readsBack(ctx, "restored")
			}},
		)...)
	}}
}

// writtenSource are the steps that make the claim "source", bound, with
// the data file a pod wrote and no pod using it any more.
func (s *Session) writtenSource() []Step {
	return []Step{
		{"create a claim of the Immediate class", func(ctx context.Context) error {
			return s.createClaim(ctx, s.newClaim("source", s.Lab.ImmediateClass))
		}},
		{"the claim binds, and a pod writes a file into it", func(ctx context.Context) error {
			_, pv, err := s.bound(ctx, "source")
			if err != nil {
				return err
			}
			writer, err := s.startPod(ctx, s.newPod("writer", s.firstNode(pv), "source", false))
			if err != nil {
				return err
			}
			return s.writeFile(writer, pv.Name, s.Namespace)
		}},
		{"the pod is deleted", func(ctx context.Context) error { return s.deletePod(ctx, "writer") }},
	}
}

// readsBack waits until claim binds, starts a pod using it and checks the
// data file is in it.
func (s *Session) readsBack(ctx context.Context, claim string) error {
	_, pv, err := s.bound(ctx, claim)
	if err != nil {
		return err
	}
	reader, err := s.startPod(ctx, s.newPod("reader-"+claim, s.firstNode(pv), claim, false))
	if err != nil {
		return err
	}
	return s.readFile(reader, pv.Name, s.Namespace)
}

// snapshotReady waits until the VolumeSnapshot is ready to use.
func (s *Session) snapshotReady(ctx context.Context, name string) error {
	return waitFor(ctx, "VolumeSnapshot", s.Namespace, name, "snapshot "+name+" to be ready to use", func(ctx context.Context) (string, error) {
		vs, err := s.Lab.Snapshots.SnapshotV1().VolumeSnapshots(s.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		return snapshotNotReady(vs), nil
	})
}

// snapshotNotReady is why vs is not ready to use, "" when it is.
func snapshotNotReady(vs *snapv1.VolumeSnapshot) string {
	switch st := vs.Status; {
	case st == nil:
		return "snapshot " + vs.Name + " has no status yet"
	case st.Error != nil && st.Error.Message != nil:
		return "snapshot " + vs.Name + ": " + *st.Error.Message
	case !ptr.Deref(st.ReadyToUse, false):
		return "snapshot " + vs.Name + " is not ready to use"
	}
	return ""
}
