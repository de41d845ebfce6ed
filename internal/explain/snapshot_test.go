package explain_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/heartbeat"
	"github.com/volplane/volplane/internal/snapshotapi"
)

const snapDriver = "csi.example.com"

type vsOpt func(*snapv1.VolumeSnapshot)

// newSnapshot is a VolumeSnapshot ns/name of claim "db", uid "uid-name",
// no status yet.
func newSnapshot(name string, opts ...vsOpt) *snapv1.VolumeSnapshot {
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
	vs.Spec.Source.PersistentVolumeClaimName = ptr.To("db")
	for _, o := range opts {
		o(vs)
	}
	return vs
}

func vsClass(name string) vsOpt {
	return func(vs *snapv1.VolumeSnapshot) { vs.Spec.VolumeSnapshotClassName = ptr.To(name) }
}

func vsBound(ready bool) vsOpt {
	return func(vs *snapv1.VolumeSnapshot) {
		vs.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To(snapshotapi.ContentName(vs.UID)), ReadyToUse: ptr.To(ready)}
	}
}

type vscOpt func(*snapv1.VolumeSnapshotContent)

// newContent is the dynamic content of snapshot ns/snap, Delete, no status.
func newContent(snap string, opts ...vscOpt) *snapv1.VolumeSnapshotContent {
	uid := types.UID("uid-" + snap)
	c := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: snapshotapi.ContentName(uid), UID: "c-" + uid}}
	c.Spec.Driver, c.Spec.DeletionPolicy = snapDriver, snapv1.VolumeSnapshotContentDelete
	c.Spec.Source.VolumeHandle = ptr.To("vol-db")
	c.Spec.VolumeSnapshotRef = v1.ObjectReference{Namespace: "ns", Name: snap, UID: uid}
	for _, o := range opts {
		o(c)
	}
	return c
}

func vscHandle(h string, ready bool) vscOpt {
	return func(c *snapv1.VolumeSnapshotContent) {
		c.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To(h), ReadyToUse: ptr.To(ready), RestoreSize: ptr.To[int64](1 << 30)}
	}
}

func snapClass(name, driver string, isDefault bool) *snapv1.VolumeSnapshotClass {
	c := &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: driver, DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	if isDefault {
		c.Annotations = map[string]string{snapshotapi.DefaultClassAnnotation: "true"}
	}
	return c
}

// snapFacts has a bound claim ns/db of a CSI volume of snapDriver and its
// default snapshot class.
func snapFacts() *explain.Facts {
	f := facts()
	pv := newPV("pv-db", "1Gi", pvCSI(snapDriver, "vol-db"))
	f.Claims = []*v1.PersistentVolumeClaim{newClaim("db", "1Gi", claimBoundTo(pv))}
	f.Volumes = []*v1.PersistentVolume{pv}
	f.SnapshotClasses = []*snapv1.VolumeSnapshotClass{snapClass("snaps", snapDriver, true)}
	return f
}

func TestSnapshotSummarySaysWhyItIsNotReady(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vs     *snapv1.VolumeSnapshot
		change func(*explain.Facts)
		want   string
	}{
		{"claim missing", newSnapshot("snap"), func(f *explain.Facts) { f.Claims = nil },
			"Not ready: its claim ns/db does not exist."},
		{"claim not bound", newSnapshot("snap"), func(f *explain.Facts) { f.Claims = []*v1.PersistentVolumeClaim{newClaim("db", "1Gi")} },
			"Not ready: its claim db is not bound yet (a snapshot is taken of a bound volume)."},
		{"not CSI", newSnapshot("snap"), func(f *explain.Facts) { f.Volumes[0].Spec.CSI = nil },
			"Not ready: its claim's volume pv-db is not a CSI volume, which cannot be snapshotted."},
		{"no default class", newSnapshot("snap"), func(f *explain.Facts) { f.SnapshotClasses = nil },
			"Not ready: it names no VolumeSnapshotClass and driver csi.example.com has no default one"},
		{"two default classes", newSnapshot("snap"), func(f *explain.Facts) {
			f.SnapshotClasses = append(f.SnapshotClasses, snapClass("other", snapDriver, true))
		}, "has several default ones (snaps and other); name one."},
		{"class missing", newSnapshot("snap", vsClass("nope")), nil,
			"Not ready: its VolumeSnapshotClass nope does not exist."},
		{"class of another driver", newSnapshot("snap", vsClass("elsewhere")), func(f *explain.Facts) {
			f.SnapshotClasses = append(f.SnapshotClasses, snapClass("elsewhere", "other.example.com", false))
		}, "is for driver other.example.com, its claim's volume is of csi.example.com."},
		{"content not made yet", newSnapshot("snap"), nil,
			"Not ready: waiting for the snapshot loop to create its content snapcontent-uid-snap (is it running?)."},
		{"content missing", newSnapshot("snap", vsBound(false)), nil,
			"Not ready: its content snapcontent-uid-snap is missing (SnapshotContentMissing)."},
		{"misbound", newSnapshot("snap", vsBound(false)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap", func(c *snapv1.VolumeSnapshotContent) { c.Spec.VolumeSnapshotRef.UID = "someone-else" })}
		}, "misbound (SnapshotMisbound)."},
		{"driver error", newSnapshot("snap", vsBound(false)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap", func(c *snapv1.VolumeSnapshotContent) {
				c.Status = &snapv1.VolumeSnapshotContentStatus{Error: &snapv1.VolumeSnapshotError{Message: ptr.To("out of space")}}
			})}
		}, "Not ready: the driver failed: out of space."},
		{"snapshot error", newSnapshot("snap", func(vs *snapv1.VolumeSnapshot) {
			vs.Status = &snapv1.VolumeSnapshotStatus{Error: &snapv1.VolumeSnapshotError{Message: ptr.To("Failed to create snapshot content")}}
		}), nil, "Not ready: the snapshot failed: Failed to create snapshot content."},
		{"create in flight", newSnapshot("snap", vsBound(false)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap", func(c *snapv1.VolumeSnapshotContent) {
				c.Annotations = map[string]string{snapshotapi.BeingCreated: "yes"}
			})}
		}, "Not ready: the snapshotter of csi.example.com is taking it (CreateSnapshot in flight)."},
		{"no snapshotter reported", newSnapshot("snap", vsBound(false)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap")}
		}, "Not ready: waiting for the snapshotter: no snapshotter serving driver csi.example.com has reported."},
		{"no snapshotter Lease", newSnapshot("snap", vsBound(false)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap")}
			f.Snapshotters = map[string]explain.Provisioner{snapDriver: explain.SnapshotterPresence(snapDriver, nil, now)}
		}, "Not ready: waiting for the snapshotter: no snapshotter is serving csi.example.com: no heartbeat or leader election Lease of it was found."},
		{"a node's snapshotter stopped reporting", newSnapshot("snap", vsBound(false)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap")}
			lease := heartbeat.Renewal(nil, heartbeat.Beat{Role: heartbeat.Snapshotter, Namespace: "volplane", Driver: snapDriver, Node: "node-2",
				Identity: "volplane-node-x", Duration: heartbeat.DefaultDuration}, now.Add(-5*time.Minute))
			f.Snapshotters = map[string]explain.Provisioner{snapDriver: explain.SnapshotterPresence(snapDriver, []coordinationv1.Lease{*lease}, now)}
		}, "no snapshotter is serving csi.example.com: the last heartbeat was 5m ago, from volplane-node-x on node node-2 (Lease volplane/volplane-snapshotter-csi.example.com--node-2)."},
		{"labelled for a node whose snapshotter does not report", newSnapshot("snap", vsBound(false)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap", func(c *snapv1.VolumeSnapshotContent) {
				c.Labels = map[string]string{snapshotapi.ManagedByLabel: "node-2"}
			})}
			var leases []coordinationv1.Lease
			for node, age := range map[string]time.Duration{"node-1": time.Second, "node-2": 5 * time.Minute} {
				leases = append(leases, *heartbeat.Renewal(nil, heartbeat.Beat{Role: heartbeat.Snapshotter, Namespace: "volplane",
					Driver: snapDriver, Node: node, Identity: "volplane-" + node, Duration: heartbeat.DefaultDuration}, now.Add(-age)))
			}
			f.Snapshotters = map[string]explain.Provisioner{snapDriver: explain.SnapshotterPresence(snapDriver, leases, now)}
		}, "Not ready: waiting for the snapshotter: it is labelled snapshot.storage.kubernetes.io/managed-by=node-2, and no snapshotter of csi.example.com on node node-2 has reported (csi.example.com is served by volplane-node-1 on node node-1 (Lease volplane/volplane-snapshotter-csi.example.com--node-1 renewed 1s ago))."},
		{"labelled for a node whose snapshotter reports", newSnapshot("snap", vsBound(false)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap", func(c *snapv1.VolumeSnapshotContent) {
				c.Labels = map[string]string{snapshotapi.ManagedByLabel: "node-1"}
			})}
			lease := heartbeat.Renewal(nil, heartbeat.Beat{Role: heartbeat.Snapshotter, Namespace: "volplane",
				Driver: snapDriver, Node: "node-1", Identity: "volplane-node-1", Duration: heartbeat.DefaultDuration}, now.Add(-time.Second))
			f.Snapshotters = map[string]explain.Provisioner{snapDriver: explain.SnapshotterPresence(snapDriver, []coordinationv1.Lease{*lease}, now)}
		}, "Not ready: waiting for the snapshotter: csi.example.com is served by volplane-node-1 on node node-1"},
		{"taken, not ready", newSnapshot("snap", vsBound(false)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap", vscHandle("h-1", false))}
		}, "Not ready: driver csi.example.com has taken snapshot h-1 and reports it not ready yet (still being processed)."},
		{"content ready, status not copied", newSnapshot("snap", vsBound(false)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap", vscHandle("h-1", true))}
		}, "the snapshot loop copies its status at its next sync"},
		{"ready", newSnapshot("snap", vsBound(true)), func(f *explain.Facts) {
			f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap", vscHandle("h-1", true))}
		}, "Ready: backend snapshot h-1 of csi.example.com."},
		{"pre-provisioned content missing", func() *snapv1.VolumeSnapshot {
			vs := newSnapshot("snap")
			vs.Spec.Source = snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To("pre")}
			return vs
		}(), nil, "Not ready: waiting for content pre, which does not exist."},
		{"pre-provisioned content for another snapshot", func() *snapv1.VolumeSnapshot {
			vs := newSnapshot("snap")
			vs.Spec.Source = snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To("pre")}
			return vs
		}(), func(f *explain.Facts) {
			c := newContent("victim")
			c.Name = "pre"
			c.Spec.VolumeSnapshotRef = v1.ObjectReference{Namespace: "other", Name: "victim"}
			f.Contents = []*snapv1.VolumeSnapshotContent{c}
		}, "is bound to another snapshot (other/victim): misbound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := snapFacts()
			if tc.change != nil {
				tc.change(f)
			}
			r := explain.Snapshot(tc.vs, f)
			if !strings.Contains(r.Summary, tc.want) {
				t.Errorf("summary %q, want %q", r.Summary, tc.want)
			}
			var b bytes.Buffer
			if err := r.Table(&b); err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(b.String(), "\n") {
				if len([]rune(line)) > explain.Width {
					t.Errorf("line %d is %d wide: %q", i+1, len([]rune(line)), line)
				}
			}
		})
	}
}

func TestSnapshotReportSaysWhatHoldsItsDeletionAndWhoRestoresFromIt(t *testing.T) {
	f := snapFacts()
	vs := newSnapshot("snap", vsBound(true), func(vs *snapv1.VolumeSnapshot) {
		vs.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
		vs.Finalizers = []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}
	})
	content := newContent("snap", vscHandle("h-1", true), func(c *snapv1.VolumeSnapshotContent) {
		c.Finalizers = []string{snapshotapi.ContentFinalizer}
	})
	f.Contents = []*snapv1.VolumeSnapshotContent{content}
	restore := newClaim("restore", "1Gi", func(c *v1.PersistentVolumeClaim) {
		c.Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "snap"}
	})
	elsewhere := newClaim("elsewhere", "1Gi", func(c *v1.PersistentVolumeClaim) {
		c.Spec.DataSource = &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "other"}
	})
	f.Claims = append(f.Claims, restore, elsewhere)
	r := explain.Snapshot(vs, f)
	if join(r.RestoredBy) != "ns/restore" {
		t.Errorf("restored by %q", r.RestoredBy)
	}
	for _, want := range []string{"volumesnapshot-as-source-protection keeps it while ns/restore restore from it",
		"volumesnapshot-bound-protection keeps it until its content snapcontent-uid-snap (Delete) is deleted"} {
		if !strings.Contains(r.Summary, want) {
			t.Errorf("summary %q, want %q", r.Summary, want)
		}
	}
	if len(r.Finalizers) != 3 || r.Finalizers[2].Object != "volumesnapshotcontent snapcontent-uid-snap" ||
		!strings.Contains(r.Finalizers[2].RemovedBy, "the snapshotter, after DeleteSnapshot") {
		t.Errorf("finalizers %+v", r.Finalizers)
	}
	f.Claims = f.Claims[:1]
	f.Contents[0].DeletionTimestamp = &metav1.Time{Time: now}
	r = explain.Snapshot(vs, f)
	if want := "its content snapcontent-uid-snap waits for the snapshotter of csi.example.com to delete backend snapshot h-1"; !strings.Contains(r.Summary, want) {
		t.Errorf("summary %q, want %q", r.Summary, want)
	}
}

func TestContentReport(t *testing.T) {
	f := snapFacts()
	gone := newContent("gone", vscHandle("h-2", true))
	if r := explain.Content(gone, f); r.SnapshotState != "Missing" || !strings.Contains(r.Summary, "yet nothing deletes it (policy Delete)") {
		t.Errorf("content whose snapshot is gone: %+v", r)
	}
	gone.Spec.DeletionPolicy = snapv1.VolumeSnapshotContentRetain
	if r := explain.Content(gone, f); !strings.Contains(r.Summary, "policy Retain keeps it and backend snapshot h-2") {
		t.Errorf("retained: %q", r.Summary)
	}
	vs := newSnapshot("snap", vsBound(true))
	f.VolumeSnapshots = []*snapv1.VolumeSnapshot{vs}
	used := newContent("snap", vscHandle("h-1", true), func(c *snapv1.VolumeSnapshotContent) {
		c.DeletionTimestamp, c.Finalizers = &metav1.Time{Time: now}, []string{snapshotapi.ContentFinalizer}
	})
	if r := explain.Content(used, f); !strings.Contains(r.Summary, "its snapshot ns/snap still uses it") {
		t.Errorf("content in use: %q", r.Summary)
	}
}

func TestSnapshotterPresenceReadsTheSidecarsLease(t *testing.T) {
	lease := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: explain.SnapshotterLeaseName("csi.example.com")},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("snapshotter-0"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: now.Add(-5 * time.Second)}}}
	if lease.Name != "external-snapshotter-leader-csi-example-com" {
		t.Errorf("lease name %q", lease.Name)
	}
	if p := explain.SnapshotterPresence("csi.example.com", []coordinationv1.Lease{lease}, now); !p.Serving ||
		p.Note != "csi.example.com is served by the csi-snapshotter leader snapshotter-0 (Lease kube-system/external-snapshotter-leader-csi-example-com renewed 5s ago)" {
		t.Errorf("fresh lease: %+v", p)
	}
	if p := explain.SnapshotterPresence("csi.example.com", []coordinationv1.Lease{lease}, now.Add(time.Hour)); p.Serving {
		t.Errorf("stale lease: %+v", p)
	}
}
