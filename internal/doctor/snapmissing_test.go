package doctor

import (
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// hostContent is a ready content of hostpathDriver taken of volume vol.
func hostContent(name, snap, vol string) *snapv1.VolumeSnapshotContent {
	return vcontent(name, snap, func(c *snapv1.VolumeSnapshotContent) {
		c.Spec.Driver, c.Spec.Source.VolumeHandle = hostpathDriver, ptr.To(vol)
	})
}

// hostSnapBackend is hostpathDriver's endpoint on node, listing volume
// pv-db and snaps, before and after.
func hostSnapBackend(node string, snaps ...BackendSnapshot) Backend {
	b := nodeBackend(node, BackendVolume{ID: "pv-db"})
	b.ListsSnapshots, b.Snapshots, b.RelistedSnapshots = true, snaps, map[string]bool{}
	for _, s := range snaps {
		b.RelistedSnapshots[s.ID] = true
	}
	return b
}

func TestCheckFindsReadyContentsWhoseBackendSnapshotIsGone(t *testing.T) {
	restoring := claim("restore", pending(time.Minute), func(c *v1.PersistentVolumeClaim) {
		c.Spec.DataSource = &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "snap"}
	})
	thief := claim("thief", pending(time.Minute), func(c *v1.PersistentVolumeClaim) {
		c.Namespace = "other"
		c.Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "snap", Namespace: ptr.To("ns")}
	})
	retake := "kubectl create -f - <<'EOF'\napiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshot\nmetadata:\n" +
		"  namespace: \"ns\"\n  generateName: \"snap-\"\nspec:\n  volumeSnapshotClassName: \"fast\"\n  source:\n    persistentVolumeClaimName: \"db\"\nEOF"
	withClass := func(vs *snapv1.VolumeSnapshot) { vs.Spec.VolumeSnapshotClassName = ptr.To("fast") }
	for _, tc := range []struct {
		name  string
		world *world
		want  []want
		note  string
	}{{
		name:  "a ready content whose backend snapshot is listed is healthy",
		world: newWorld().snapshots(vsnap("snap")).contents(vcontent("content-snap", "snap")).backends(snapBackend(BackendSnapshot{ID: "h-content-snap"})),
	}, {
		name: "listed only after the cluster was read is not missing",
		world: newWorld().snapshots(vsnap("snap")).contents(vcontent("content-snap", "snap")).backends(func() Backend {
			b := snapBackend()
			b.RelistedSnapshots["h-content-snap"] = true
			return b
		}()),
	}, {
		name:  "a bound snapshot's backend snapshot is gone: explain and take it again, never a delete",
		world: newWorld().claims(restoring, thief).snapshots(vsnap("snap", withClass)).contents(vcontent("content-snap", "snap")).backends(snapBackend()),
		want: []want{{KindMissingBackendSnapshot, "volumesnapshotcontent content-snap",
			"no longer has its backend snapshot h-content-snap: the data of VolumeSnapshot ns/snap is lost, and every claim restored from it fails",
			[]string{"volplane explain volumesnapshot ns/snap", retake}}},
	}, {
		name:  "a content whose snapshot is gone is only explained",
		world: newWorld().contents(vcontent("content-gone", "gone", func(c *snapv1.VolumeSnapshotContent) { c.Spec.DeletionPolicy = snapv1.VolumeSnapshotContentRetain })).backends(snapBackend()),
		want: []want{
			{KindOrphanedContent, "volumesnapshotcontent content-gone", "policy Retain keeps", nil},
			{KindMissingBackendSnapshot, "volumesnapshotcontent content-gone", "no longer has its backend snapshot h-content-gone",
				[]string{"volplane explain volumesnapshotcontent content-gone"}}},
	}, {
		name: "a pre-provisioned snapshot (no source claim) is only explained",
		world: newWorld().snapshots(vsnap("snap", func(vs *snapv1.VolumeSnapshot) {
			vs.Spec.Source = snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To("content-snap")}
		})).contents(vcontent("content-snap", "snap")).backends(snapBackend()),
		want: []want{{KindMissingBackendSnapshot, "volumesnapshotcontent content-snap", "VolumeSnapshot ns/snap is lost", []string{"volplane explain volumesnapshot ns/snap"}}},
	}, {
		name: "not ready, being deleted, or marked for deletion: not checked",
		world: newWorld().snapshots(vsnap("snap")).contents(
			vcontent("content-a", "snap", func(c *snapv1.VolumeSnapshotContent) { c.Status.ReadyToUse = ptr.To(false) }),
			vcontent("content-b", "snap", func(c *snapv1.VolumeSnapshotContent) { c.Status.SnapshotHandle = nil }),
			vcontent("content-c", "snap", func(c *snapv1.VolumeSnapshotContent) {
				c.Annotations = map[string]string{snapshotapi.BeingDeleted: "yes"}
			})).backends(snapBackend()),
	}, {
		name:  "a driver that lists no snapshots is noted, not guessed",
		world: newWorld().snapshots(vsnap("snap")).contents(vcontent("content-snap", "snap")).backends(Backend{Driver: networkDriver}),
		note:  "1 ready VolumeSnapshotContent(s) of driver network.csi.volplane.io not checked for their backend snapshot: it does not list its snapshots",
	}, {
		name: "node-local: missing only when every node that could hold it was listed",
		world: newWorld().volumes(pv("pv-db", claimRef("db"), onNodeAffinity(topoKey, "n1"))).snapshots(vsnap("snap")).
			contents(hostContent("content-snap", "snap", "pv-db")).nodes(node("n1"), node("n2")).csiNodes(csiNode("n1", hostpathDriver), csiNode("n2", hostpathDriver)).
			backends(hostSnapBackend("n1")),
		want: []want{{KindMissingBackendSnapshot, "volumesnapshotcontent content-snap", "hostpath.csi.volplane.io no longer has its backend snapshot", nil}},
	}, {
		name: "node-local: held on the node of its volume",
		world: newWorld().volumes(pv("pv-db", claimRef("db"), onNodeAffinity(topoKey, "n1"))).snapshots(vsnap("snap")).
			contents(hostContent("content-snap", "snap", "pv-db")).nodes(node("n1"), node("n2")).csiNodes(csiNode("n1", hostpathDriver), csiNode("n2", hostpathDriver)).
			backends(hostSnapBackend("n1", BackendSnapshot{ID: "h-content-snap"})),
	}, {
		name: "node-local without its PV: every node running the driver must be listed",
		world: newWorld().snapshots(vsnap("snap")).contents(hostContent("content-snap", "snap", "gone-volume")).
			nodes(node("n1"), node("n2")).csiNodes(csiNode("n1", hostpathDriver), csiNode("n2", hostpathDriver)).
			backends(func() Backend { b := hostSnapBackend("n1"); b.Volumes = nil; return b }()),
		note: "1 ready VolumeSnapshotContent(s) of driver hostpath.csi.volplane.io not checked for their backend snapshot: the endpoints of node(s) n2 were not read",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(&tc.world.s, thresholds)
			if len(r.Findings) != len(tc.want) {
				t.Fatalf("got %d findings, want %d: %+v", len(r.Findings), len(tc.want), r.Findings)
			}
			for i, w := range tc.want {
				checkFinding(t, r.Findings[i], w)
			}
			for _, f := range r.Findings {
				if f.Kind != KindMissingBackendSnapshot {
					continue
				}
				for _, fix := range f.Fixes {
					if strings.Contains(fix.Command, "delete volumesnapshotcontent") || strings.Contains(fix.Command, "finalizers") {
						t.Errorf("%s: fix %q deletes or unholds a content", f.Kind, fix.Command)
					}
				}
			}
			if tc.note != "" && !strings.Contains(strings.Join(r.Notes, "|"), tc.note) {
				t.Errorf("notes %q, want %q", r.Notes, tc.note)
			}
		})
	}
}

// A claim Pending while it restores says, as explain does, what its
// source keeps it waiting for; a source of another namespace is refused,
// never read.
func TestCheckSaysWhatAPendingRestoreWaitsFor(t *testing.T) {
	from := func(ns *string) claimOpt {
		return func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "snap", Namespace: ns}
		}
	}
	notReady := func(vs *snapv1.VolumeSnapshot) { vs.Status.ReadyToUse = ptr.To(false) }
	for _, tc := range []struct {
		name  string
		claim *v1.PersistentVolumeClaim
		want  string
	}{
		{"not ready", claim("restore", pending(time.Hour), from(nil)),
			"Pending for 60m: Restoring from volumesnapshot ns/snap: the provisioner waits and tries again: snapshot snap is not Ready."},
		{"another namespace", claim("restore", pending(time.Hour), from(ptr.To("victim"))),
			"Pending for 60m: Restoring from volumesnapshot victim/snap: the provisioner refuses it: dataSourceRef namespace specified but the CrossNamespaceVolumeDataSource feature is disabled."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			victim := vsnap("snap")
			victim.Namespace = "victim"
			w := newWorld().classes(class("fast", networkDriver, false)).claims(tc.claim).
				snapshots(vsnap("snap", notReady), victim).contents(vcontent("content-snap", "snap"))
			r := Check(&w.s, thresholds)
			if len(r.Findings) != 1 || r.Findings[0].Kind != KindClaimPending || !strings.HasPrefix(r.Findings[0].Problem, tc.want) {
				t.Fatalf("findings %+v, want %q", r.Findings, tc.want)
			}
		})
	}
}
