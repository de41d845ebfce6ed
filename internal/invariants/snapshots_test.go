package invariants

import (
	"strings"
	"testing"
	"time"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func volumeSnapshot(name string, uid types.UID, content string, ready bool) snapv1.VolumeSnapshot {
	vs := snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, CreationTimestamp: metav1.NewTime(t0)}}
	vs.Spec.Source.PersistentVolumeClaimName = ptr.To("a")
	vs.Status = &snapv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(ready), RestoreSize: ptr.To(resource.MustParse("1Gi"))}
	if content != "" {
		vs.Status.BoundVolumeSnapshotContentName = ptr.To(content)
	}
	return vs
}

func content(name, driver, handle string, snapUID types.UID, policy snapv1.DeletionPolicy, ready bool) snapv1.VolumeSnapshotContent {
	c := snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Spec.Driver, c.Spec.DeletionPolicy = driver, policy
	c.Spec.Source.VolumeHandle = ptr.To("vol-b")
	c.Spec.VolumeSnapshotRef = v1.ObjectReference{Namespace: "ns", Name: "s-" + string(snapUID), UID: snapUID}
	c.Status = &snapv1.VolumeSnapshotContentStatus{ReadyToUse: ptr.To(ready)}
	if handle != "" {
		c.Status.SnapshotHandle = ptr.To(handle)
	}
	return c
}

// snapshotted is healthy() with a ready snapshot of claim b, and claim r
// restored from it.
func snapshotted() State {
	s := healthy()
	s.SnapshotsRead = true
	s.Snapshots = []snapv1.VolumeSnapshot{volumeSnapshot("snap", "us", "snapcontent-us", true)}
	s.Contents = []snapv1.VolumeSnapshotContent{content("snapcontent-us", network, "snap-1", "us", snapv1.VolumeSnapshotContentDelete, true)}
	s.Backends[2].ListsSnapshots = true
	s.Backends[2].Snapshots = []BackendSnapshot{{ID: "snap-1", Source: "vol-b"}}
	r := claim("r", "ur", "pv-x")
	r.Spec.DataSource = &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "snap"}
	s.Claims = append(s.Claims, r)
	x := pv("pv-x", network, "vol-x", "", v1.PersistentVolumeReclaimDelete, "ur")
	x.Annotations = map[string]string{storagehelpers.AnnDynamicallyProvisioned: network}
	x.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute))
	x.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	x.Spec.ClaimRef.Name = "r"
	s.PVs = append(s.PVs, x)
	s.Backends[2].VolumeIDs = append(s.Backends[2].VolumeIDs, "vol-x")
	return s
}

func TestSnapshotPromises(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*State, *Expect)
		want   []string // substrings, one per violation
	}{
		{"healthy", func(*State, *Expect) {}, nil},
		{"snapshots not read: not checked", func(s *State, _ *Expect) {
			s.SnapshotsRead = false
			s.Backends[2].Snapshots = append(s.Backends[2].Snapshots, BackendSnapshot{ID: "stray"})
		}, nil},
		{"backend snapshot without content", func(s *State, _ *Expect) {
			s.Backends[2].Snapshots = append(s.Backends[2].Snapshots, BackendSnapshot{ID: "stray", Source: "vol-b"})
		}, []string{"backend snapshot stray of network.csi (of volume vol-b) has no VolumeSnapshotContent"}},
		{"there before the test", func(s *State, e *Expect) {
			s.Backends[2].Snapshots = append(s.Backends[2].Snapshots, BackendSnapshot{ID: "stray", Source: "vol-b"})
			e.Left = Before(*s)
		}, nil},
		{"a content being created of the same source may own it", func(s *State, _ *Expect) {
			s.Backends[2].Snapshots = append(s.Backends[2].Snapshots, BackendSnapshot{ID: "new", Source: "vol-b"})
			c := content("snapcontent-un", network, "", "un", snapv1.VolumeSnapshotContentDelete, false)
			c.Annotations = map[string]string{snapshotapi.BeingCreated: "yes"}
			s.Contents = append(s.Contents, c)
			s.Snapshots = append(s.Snapshots, volumeSnapshot("s-un", "un", "snapcontent-un", false))
		}, nil},
		{"a group content's member counts", func(s *State, _ *Expect) {
			s.Backends[2].Snapshots = append(s.Backends[2].Snapshots, BackendSnapshot{ID: "member", Source: "vol-b"})
			s.GroupContents = []groupv1.VolumeGroupSnapshotContent{{Spec: groupv1.VolumeGroupSnapshotContentSpec{Driver: network},
				Status: &groupv1.VolumeGroupSnapshotContentStatus{VolumeSnapshotInfoList: []groupv1.VolumeSnapshotInfo{{SnapshotHandle: "member"}}}}}
		}, nil},
		{"a group being created of the same source may own it", func(s *State, _ *Expect) {
			s.Backends[2].Snapshots = append(s.Backends[2].Snapshots, BackendSnapshot{ID: "member", Source: "vol-b"})
			g := groupv1.VolumeGroupSnapshotContent{Spec: groupv1.VolumeGroupSnapshotContentSpec{Driver: network,
				Source: groupv1.VolumeGroupSnapshotContentSource{VolumeHandles: []string{"vol-b"}}}}
			g.Annotations = map[string]string{snapshotapi.GroupBeingCreated: "yes"}
			s.GroupContents = []groupv1.VolumeGroupSnapshotContent{g}
		}, nil},
		{"pre-provisioned handle counts", func(s *State, _ *Expect) {
			s.Backends[2].Snapshots = append(s.Backends[2].Snapshots, BackendSnapshot{ID: "pre"})
			c := content("pre", network, "", "", snapv1.VolumeSnapshotContentRetain, false)
			c.Spec.Source = snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To("pre")}
			s.Contents = append(s.Contents, c)
		}, nil},
		{"ready content whose backend snapshot is gone", func(s *State, _ *Expect) {
			s.Backends[2].Snapshots = nil
		}, []string{"VolumeSnapshotContent snapcontent-us is ready, yet its backend snapshot snap-1 of network.csi is gone"}},
		{"Delete content left behind by its snapshot", func(s *State, _ *Expect) {
			s.Snapshots = nil
		}, []string{"VolumeSnapshotContent snapcontent-us (Delete): its snapshot ns/s-us (uid us) is gone, yet it was not deleted"}},
		{"Retain content left behind is at rest", func(s *State, _ *Expect) {
			s.Snapshots = nil
			s.Contents[0].Spec.DeletionPolicy = snapv1.VolumeSnapshotContentRetain
		}, nil},
		{"deleted snapshot left its backend snapshot", func(s *State, e *Expect) {
			s.Snapshots, s.Contents = nil, nil
			e.DeletedSnapshots = []DeletedSnapshot{{Namespace: "ns", Name: "snap", UID: "us", Content: "snapcontent-us",
				Snapshot: Volume{network, "snap-1"}, Policy: snapv1.VolumeSnapshotContentDelete}}
		}, []string{"VolumeSnapshot ns/snap was deleted, yet the backend snapshot snap-1", "backend snapshot snap-1 of network.csi (of volume vol-b) has no"}},
		{"terminating", func(s *State, _ *Expect) {
			s.Snapshots[0].DeletionTimestamp = ptr.To(metav1.NewTime(t0))
			s.Contents[0].DeletionTimestamp = ptr.To(metav1.NewTime(t0))
		}, []string{"VolumeSnapshot ns/snap is still Terminating", "VolumeSnapshotContent snapcontent-us is still Terminating"}},
		{"restored from a snapshot not ready", func(s *State, _ *Expect) {
			s.Snapshots[0].Status.ReadyToUse = ptr.To(false)
		}, []string{"claim ns/r was restored from VolumeSnapshot ns/snap, which is not ready"}},
		{"restored from a snapshot bound to a content pointing elsewhere", func(s *State, _ *Expect) {
			s.Contents[0].Spec.VolumeSnapshotRef.UID = "other"
			s.Snapshots = append(s.Snapshots, volumeSnapshot("s-other", "other", "snapcontent-us", true))
		}, []string{"which is bound to content snapcontent-us, which does not point back to it"}},
		{"restored from a snapshot bound to no content", func(s *State, _ *Expect) {
			s.Snapshots[0].Status.BoundVolumeSnapshotContentName = nil
		}, []string{"which is bound to no content"}},
		{"a later snapshot of the same name is not the source", func(s *State, _ *Expect) {
			s.Snapshots[0].Status.ReadyToUse = ptr.To(false)
			s.Snapshots[0].CreationTimestamp = metav1.NewTime(t0.Add(time.Hour))
		}, nil},
		{"a statically bound PV was not restored", func(s *State, _ *Expect) {
			s.Snapshots[0].Status.ReadyToUse = ptr.To(false)
			s.PVs[3].Annotations = nil
		}, nil},
		{"restored into a volume smaller than restoreSize", func(s *State, _ *Expect) {
			s.Snapshots[0].Status.RestoreSize = ptr.To(resource.MustParse("2Gi"))
		}, []string{"into PV pv-x of 1Gi, smaller than its restoreSize 2Gi"}},
		{"dataSourceRef names another namespace's snapshot", func(s *State, _ *Expect) {
			s.Claims[2].Spec.DataSource = nil
			s.Claims[2].Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot,
				Name: "snap", Namespace: ptr.To("elsewhere")}
			other := volumeSnapshot("snap", "uo", "", false)
			other.Namespace = "elsewhere"
			s.Snapshots = append(s.Snapshots, other)
		}, []string{"claim ns/r was restored from VolumeSnapshot elsewhere/snap, which is bound to no content"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, e := snapshotted(), Expect{}
			tc.change(&s, &e)
			got := Check(s, e)
			if len(got) != len(tc.want) {
				t.Fatalf("violations %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					found = found || strings.Contains(g, w)
				}
				if !found {
					t.Errorf("no violation says %q: %q", w, got)
				}
			}
		})
	}
}
