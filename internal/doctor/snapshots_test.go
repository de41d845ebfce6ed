package doctor

import (
	"strings"
	"testing"
	"time"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/snapshotapi"
)

const networkDriver = "network.csi.volplane.io"

// vsnap is a ready VolumeSnapshot ns/name of claim "db", uid "uid-name",
// bound to content "content-name".
func vsnap(name string, opts ...func(*snapv1.VolumeSnapshot)) *snapv1.VolumeSnapshot {
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		ResourceVersion: "11", CreationTimestamp: ago(time.Hour)}}
	vs.Spec.Source.PersistentVolumeClaimName = ptr.To("db")
	vs.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To("content-" + name), ReadyToUse: ptr.To(true)}
	for _, o := range opts {
		o(vs)
	}
	return vs
}

// vcontent is a ready dynamic content bound to snapshot ns/snap (uid
// "uid-snap"), handle "h-name", of networkDriver, policy Delete.
func vcontent(name, snap string, opts ...func(*snapv1.VolumeSnapshotContent)) *snapv1.VolumeSnapshotContent {
	c := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "12", CreationTimestamp: ago(time.Hour),
		Finalizers: []string{snapshotapi.ContentFinalizer}}}
	c.Spec.Driver, c.Spec.DeletionPolicy = networkDriver, snapv1.VolumeSnapshotContentDelete
	c.Spec.Source.VolumeHandle = ptr.To("vol-db")
	c.Spec.VolumeSnapshotRef = v1.ObjectReference{Namespace: "ns", Name: snap, UID: types.UID("uid-" + snap)}
	c.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("h-" + name), ReadyToUse: ptr.To(true)}
	for _, o := range opts {
		o(c)
	}
	return c
}

func snapDeleting(finalizers ...string) func(*snapv1.VolumeSnapshot) {
	return func(vs *snapv1.VolumeSnapshot) {
		vs.DeletionTimestamp, vs.Finalizers = ptr.To(ago(time.Hour)), finalizers
	}
}

func contentDeleting(c *snapv1.VolumeSnapshotContent) { c.DeletionTimestamp = ptr.To(ago(time.Hour)) }

// memberOf makes the snapshot a member of group ns/name of uid, as the
// group loop makes members (owner reference and status).
func memberOf(name, uid string) func(*snapv1.VolumeSnapshot) {
	return func(vs *snapv1.VolumeSnapshot) {
		vs.OwnerReferences = []metav1.OwnerReference{grouping.OwnerReference(group(name, uid))}
		vs.Status.VolumeGroupSnapshotName = ptr.To(name)
	}
}

func group(name, uid string) *groupv1.VolumeGroupSnapshot {
	return &groupv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}}
}

func (w *world) snapshots(vs ...*snapv1.VolumeSnapshot) *world {
	w.s.VolumeSnapshots = append(w.s.VolumeSnapshots, vs...)
	return w
}
func (w *world) contents(cs ...*snapv1.VolumeSnapshotContent) *world {
	w.s.Contents = append(w.s.Contents, cs...)
	return w
}

// snapBackend is networkDriver's endpoint listing snaps, before and after.
func snapBackend(snaps ...BackendSnapshot) Backend {
	b := Backend{Driver: networkDriver, Relisted: map[string]bool{}, ListsSnapshots: true, Snapshots: snaps, RelistedSnapshots: map[string]bool{}}
	for _, s := range snaps {
		b.RelistedSnapshots[s.ID] = true
	}
	return b
}

func patchRemove(resource, ns, name, rv string, i int, fin string) string {
	if ns != "" {
		ns = "-n " + ns + " "
	}
	return "kubectl patch " + resource + " " + ns + name + ` --type=json -p '[{"op": "test", "path": "/metadata/resourceVersion", "value": "` + rv + `"}, ` +
		`{"op": "test", "path": "/metadata/finalizers/` + string(rune('0'+i)) + `", "value": "` + fin + `"}, {"op": "remove", "path": "/metadata/finalizers/` + string(rune('0'+i)) + `"}]'`
}

func TestCheckFindsSnapshotProblemsWithSafeFixes(t *testing.T) {
	restoring := claim("restore", pending(time.Minute), func(c *v1.PersistentVolumeClaim) {
		c.Spec.DataSource = &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "snap"}
	})
	for _, tc := range []struct {
		name  string
		world *world
		want  []want
	}{{
		name:  "a bound, ready snapshot and its backend snapshot are healthy",
		world: newWorld().snapshots(vsnap("snap")).contents(vcontent("content-snap", "snap")).backends(snapBackend(BackendSnapshot{ID: "h-content-snap"})),
	}, {
		name:  "a backend snapshot no content names is offered for adoption as Retain",
		world: newWorld().backends(snapBackend(BackendSnapshot{ID: "snap-x", Source: "vol-db"})),
		want: []want{{KindOrphanedBackendSnapshot, "snapshot snap-x of network.csi.volplane.io", "which no VolumeSnapshotContent names",
			[]string{"kubectl create -f - <<'EOF'\napiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshotContent\nmetadata:\n  name: adopted-snap-x\nspec:\n" +
				"  deletionPolicy: Retain\n  driver: \"network.csi.volplane.io\"\n  source:\n    snapshotHandle: \"snap-x\"\n" +
				"  volumeSnapshotRef: # the VolumeSnapshot that gets its data, and no other\n    namespace: NAMESPACE\n    name: NAME\n" +
				"---\napiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshot\nmetadata:\n  namespace: NAMESPACE\n  name: NAME\n" +
				"spec:\n  source:\n    volumeSnapshotContentName: adopted-snap-x\nEOF"}}},
	}, {
		name: "a backend snapshot listed once only is not reported",
		world: newWorld().backends(func() Backend {
			b := snapBackend(BackendSnapshot{ID: "snap-x"})
			b.RelistedSnapshots = map[string]bool{}
			return b
		}()),
	}, {
		name: "a backend snapshot that may be a content's being created is not offered for adoption",
		world: newWorld().snapshots(vsnap("new")).contents(vcontent("content-new", "new", func(c *snapv1.VolumeSnapshotContent) {
			c.Status, c.Annotations = nil, map[string]string{snapshotapi.BeingCreated: "yes"}
		})).backends(snapBackend(BackendSnapshot{ID: "snap-x", Source: "vol-db"})),
		want: []want{{KindOrphanedBackendSnapshot, "snapshot snap-x of network.csi.volplane.io", "Not offered for adoption", []string{}}},
	}, {
		name: "a group content's member is its group's, and a group being made holds adoption back",
		world: func() *world {
			w := newWorld().backends(snapBackend(BackendSnapshot{ID: "member-1"}, BackendSnapshot{ID: "snap-x"}))
			g := &groupv1.VolumeGroupSnapshotContent{Spec: groupv1.VolumeGroupSnapshotContentSpec{Driver: networkDriver},
				Status: &groupv1.VolumeGroupSnapshotContentStatus{VolumeSnapshotInfoList: []groupv1.VolumeSnapshotInfo{{SnapshotHandle: "member-1"}}}}
			w.s.GroupContents = []*groupv1.VolumeGroupSnapshotContent{g}
			return w
		}(),
		want: []want{{KindOrphanedBackendSnapshot, "snapshot snap-x of network.csi.volplane.io", "while a group snapshot of network.csi.volplane.io is being made", []string{}}},
	}, {
		name:  "a driver that lists no snapshots is noted, not guessed",
		world: newWorld().contents(vcontent("content-snap", "snap")).snapshots(vsnap("snap")).backends(Backend{Driver: networkDriver}),
	}, {
		name:  "a Retain content whose snapshot is gone is information",
		world: newWorld().contents(vcontent("content-gone", "gone", func(c *snapv1.VolumeSnapshotContent) { c.Spec.DeletionPolicy = snapv1.VolumeSnapshotContentRetain })),
		want:  []want{{KindOrphanedContent, "volumesnapshotcontent content-gone", "policy Retain keeps the content and its backend snapshot h-content-gone", nil}},
	}, {
		name:  "a Delete content whose snapshot is gone is stuck: explain, keep (Retain), or delete with its risk",
		world: newWorld().contents(vcontent("content-gone", "gone")),
		want: []want{{KindOrphanedContent, "volumesnapshotcontent content-gone", "policy Delete, yet nothing deletes the content",
			[]string{"volplane explain volumesnapshotcontent content-gone",
				`kubectl patch volumesnapshotcontent content-gone --type=json -p '[{"op": "test", "path": "/metadata/resourceVersion", "value": "12"}, ` +
					`{"op": "test", "path": "/spec/deletionPolicy", "value": "Delete"}, {"op": "replace", "path": "/spec/deletionPolicy", "value": "Retain"}]'`,
				"kubectl delete volumesnapshotcontent content-gone"}}},
	}, {
		name:  "a content younger than the grace is not orphaned yet",
		world: newWorld().contents(vcontent("content-gone", "gone", func(c *snapv1.VolumeSnapshotContent) { c.CreationTimestamp = ago(time.Minute) })),
	}, {
		name: "a snapshot held as the source of a Pending claim: never offered for removal",
		world: newWorld().claims(restoring).snapshots(vsnap("snap", snapDeleting(snapshotapi.AsSourceFinalizer, snapshotapi.ProvisionerSourceFinalizer))).
			contents(vcontent("content-snap", "snap")),
		want: []want{{KindStuckDeleting, "volumesnapshot ns/snap", "the snapshot loop keeps it while claims restore from it: ns/restore",
			[]string{"volplane explain pvc ns/restore"}}},
	}, {
		name: "a claim of another namespace naming the snapshot holds nothing (hostile dataSourceRef)",
		world: newWorld().claims(claim("thief", pending(time.Minute), func(c *v1.PersistentVolumeClaim) {
			c.Namespace = "other"
			c.Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "snap", Namespace: ptr.To("ns")}
		})).snapshots(vsnap("snap", snapDeleting(snapshotapi.AsSourceFinalizer))).contents(vcontent("content-snap", "snap")),
		want: []want{{KindStuckDeleting, "volumesnapshot ns/snap", "no Pending claim restores from it",
			[]string{patchRemove("volumesnapshot", "ns", "snap", "11", 0, snapshotapi.AsSourceFinalizer)}}},
	}, {
		name:  "a snapshot whose restores are done: its source finalizers are safe to remove",
		world: newWorld().snapshots(vsnap("snap", snapDeleting(snapshotapi.AsSourceFinalizer))).contents(vcontent("content-snap", "snap")),
		want: []want{{KindStuckDeleting, "volumesnapshot ns/snap", "no Pending claim restores from it",
			[]string{patchRemove("volumesnapshot", "ns", "snap", "11", 0, snapshotapi.AsSourceFinalizer)}}},
	}, {
		name:  "a snapshot held by bound-protection while its content exists: explain only",
		world: newWorld().snapshots(vsnap("snap", snapDeleting(snapshotapi.BoundFinalizer))).contents(vcontent("content-snap", "snap")),
		want: []want{{KindStuckDeleting, "volumesnapshot ns/snap", "must first delete its content content-snap",
			[]string{"volplane explain volumesnapshot ns/snap"}}},
	}, {
		name:  "a snapshot held by bound-protection whose content is gone",
		world: newWorld().snapshots(vsnap("snap", snapDeleting(snapshotapi.BoundFinalizer))),
		want: []want{{KindStuckDeleting, "volumesnapshot ns/snap", "its content is gone",
			[]string{patchRemove("volumesnapshot", "ns", "snap", "11", 0, snapshotapi.BoundFinalizer)}}},
	}, {
		name: "a content being deleted while its snapshot still uses it: no finalizer removal",
		world: newWorld().snapshots(vsnap("snap")).contents(vcontent("content-snap", "snap", contentDeleting)).
			backends(snapBackend(BackendSnapshot{ID: "h-content-snap"})),
		want: []want{{KindStuckDeleting, "volumesnapshotcontent content-snap", "VolumeSnapshot ns/snap still uses it",
			[]string{"kubectl delete volumesnapshot -n ns snap"}}},
	}, {
		name: "a content whose CreateSnapshot may be in flight: explain only",
		world: newWorld().contents(vcontent("content-snap", "snap", contentDeleting, func(c *snapv1.VolumeSnapshotContent) {
			c.Annotations = map[string]string{snapshotapi.BeingCreated: "yes"}
		})),
		want: []want{{KindStuckDeleting, "volumesnapshotcontent content-snap", "may still be in flight",
			[]string{"volplane explain volumesnapshotcontent content-snap"}}},
	}, {
		name:  "a Delete content whose snapshotter does not delete the backend snapshot",
		world: newWorld().contents(vcontent("content-snap", "snap", contentDeleting)),
		want: []want{{KindStuckDeleting, "volumesnapshotcontent content-snap", "must first delete backend snapshot h-content-snap",
			[]string{"volplane explain volumesnapshotcontent content-snap",
				patchRemove("volumesnapshotcontent", "", "content-snap", "12", 0, snapshotapi.ContentFinalizer)}}},
	}, {
		name: "a member held by its live group: delete the group, with its risk",
		world: func() *world {
			w := newWorld().snapshots(vsnap("snap", snapDeleting(snapshotapi.InGroupFinalizer), memberOf("grp", "uid-grp"))).contents(vcontent("content-snap", "snap"))
			w.s.GroupSnapshots = []*groupv1.VolumeGroupSnapshot{group("grp", "uid-grp")}
			return w
		}(),
		want: []want{{KindStuckDeleting, "volumesnapshot ns/snap", "a member of group snapshot grp",
			[]string{"kubectl delete volumegroupsnapshot -n ns grp"}}},
	}, {
		name: "a member whose group is gone and a namesake made since: the namesake neither holds it nor is named for deletion",
		world: func() *world {
			w := newWorld().snapshots(vsnap("snap", snapDeleting(snapshotapi.InGroupFinalizer), memberOf("grp", "uid-grp"))).contents(vcontent("content-snap", "snap"))
			w.s.GroupSnapshots = []*groupv1.VolumeGroupSnapshot{group("grp", "uid-another")}
			return w
		}(),
		want: []want{{KindStuckDeleting, "volumesnapshot ns/snap", "the group snapshot that owns it is gone",
			[]string{"volplane explain volumesnapshot ns/snap"}}},
	}, {
		name:  "a member whose group is gone: the snapshot loop should let it go",
		world: newWorld().snapshots(vsnap("snap", snapDeleting(snapshotapi.InGroupFinalizer), memberOf("grp", "uid-grp"))).contents(vcontent("content-snap", "snap")),
		want: []want{{KindStuckDeleting, "volumesnapshot ns/snap", "the group snapshot that owns it is gone",
			[]string{"volplane explain volumesnapshot ns/snap"}}},
	}, {
		name: "a member by its status alone, a group of that name live: explain only",
		world: func() *world {
			w := newWorld().snapshots(vsnap("snap", snapDeleting(snapshotapi.InGroupFinalizer), func(vs *snapv1.VolumeSnapshot) {
				vs.Status.VolumeGroupSnapshotName = ptr.To("grp")
			})).contents(vcontent("content-snap", "snap"))
			w.s.GroupSnapshots = []*groupv1.VolumeGroupSnapshot{group("grp", "uid-grp")}
			return w
		}(),
		want: []want{{KindStuckDeleting, "volumesnapshot ns/snap", "group snapshot grp holds it by name",
			[]string{"volplane explain volumesnapshot ns/snap"}}},
	}, {
		name: "a claim held while a snapshot of it is made",
		world: newWorld().claims(claim("db", boundTo("pv-db"), claimDeleting(time.Hour, snapshotapi.ClaimFinalizer))).volumes(pv("pv-db", claimRef("db"))).
			snapshots(vsnap("snap", func(vs *snapv1.VolumeSnapshot) { vs.Status.ReadyToUse = ptr.To(false) })).contents(vcontent("content-snap", "snap")),
		want: []want{{KindStuckDeleting, "pvc ns/db", "snapshots of it are being made: snap", []string{}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(&tc.world.s, thresholds)
			if len(r.Findings) != len(tc.want) {
				t.Fatalf("got %d findings, want %d: %+v", len(r.Findings), len(tc.want), r.Findings)
			}
			for i, w := range tc.want {
				checkFinding(t, r.Findings[i], w)
			}
		})
	}
}

func TestCheckNotesTheSnapshotChecksItSkipped(t *testing.T) {
	w := newWorld()
	w.s.SnapshotsSkipped = "snapshot API not installed"
	r := Check(&w.s, thresholds)
	if !strings.Contains(strings.Join(r.Notes, "|"), "snapshots not checked: snapshot API not installed") {
		t.Errorf("notes %q", r.Notes)
	}
	r = Check(&newWorld().contents(vcontent("c", "snap")).snapshots(vsnap("snap")).backends(Backend{Driver: networkDriver}).s, thresholds)
	if !strings.Contains(strings.Join(r.Notes, "|"), "backend snapshots of driver network.csi.volplane.io not checked") {
		t.Errorf("notes %q", r.Notes)
	}
}
