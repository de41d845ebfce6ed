package explain_test

import (
	"bytes"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/snapshotapi"
)

func fromSnapshot(name string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) {
		c.Spec.DataSource = &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: name}
		c.Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: name}
	}
}

// restoreFacts has a ready snapshot ns/snap (restore size 1Gi) of
// snapDriver bound both ways to its content, and the claim ns/db.
func restoreFacts() *explain.Facts {
	f := snapFacts()
	vs := newSnapshot("snap", vsBound(true))
	vs.Status.RestoreSize = ptr.To(resource.MustParse("1Gi"))
	f.VolumeSnapshots = []*snapv1.VolumeSnapshot{vs}
	f.Contents = []*snapv1.VolumeSnapshotContent{newContent("snap", vscHandle("h-snap", true), func(c *snapv1.VolumeSnapshotContent) {
		c.Spec.SourceVolumeMode = ptr.To(v1.PersistentVolumeFilesystem)
	})}
	return f
}

func TestRestoresFromSaysWhatTheProvisionerDecides(t *testing.T) {
	for _, tc := range []struct {
		name    string
		claim   *v1.PersistentVolumeClaim
		change  func(*explain.Facts)
		state   string
		summary string
	}{
		{"usable", newClaim("restore", "1Gi", fromSnapshot("snap")), nil,
			explain.RestoreUsable, "The provisioner's checks pass"},
		{"larger request is the driver's to grow", newClaim("restore", "2Gi", fromSnapshot("snap")), nil,
			explain.RestoreUsable, "checks pass"},
		{"snapshot missing", newClaim("restore", "1Gi", fromSnapshot("nope")), nil,
			explain.RestoreWaiting, `error getting snapshot nope from api server: volumesnapshots.snapshot.storage.k8s.io "nope" not found`},
		{"not bound", newClaim("restore", "1Gi", fromSnapshot("snap")), func(f *explain.Facts) { f.VolumeSnapshots[0].Status = nil },
			explain.RestoreWaiting, "snapshot snap not bound"},
		{"not ready", newClaim("restore", "1Gi", fromSnapshot("snap")), func(f *explain.Facts) { f.VolumeSnapshots[0].Status.ReadyToUse = ptr.To(false) },
			explain.RestoreWaiting, "snapshot snap is not Ready"},
		{"too small", newClaim("restore", "512Mi", fromSnapshot("snap")), nil,
			explain.RestoreRefused, "requested volume size 536870912 is less than the size 1073741824 for the source snapshot snap"},
		{"other driver", newClaim("restore", "1Gi", fromSnapshot("snap")), func(f *explain.Facts) { f.Contents[0].Spec.Driver = "other.example.com" },
			explain.RestoreRefused, "is not handled by CSI driver of StorageClass fast"},
		{"content bound to another snapshot", newClaim("restore", "1Gi", fromSnapshot("snap")), func(f *explain.Facts) {
			f.Contents[0].Spec.VolumeSnapshotRef.Namespace = "other"
		}, explain.RestoreRefused, "is bound to a different snapshot"},
		{"volume mode change not allowed", newClaim("restore", "1Gi", fromSnapshot("snap"), func(c *v1.PersistentVolumeClaim) {
			c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
		}), nil, explain.RestoreRefused, "annotation is not present on snapshotcontent"},
		{"volume mode change allowed by the content", newClaim("restore", "1Gi", fromSnapshot("snap"), func(c *v1.PersistentVolumeClaim) {
			c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
		}), func(f *explain.Facts) {
			f.Contents[0].Annotations = map[string]string{snapshotapi.AllowVolumeModeChange: "true"}
		}, explain.RestoreUsable, "checks pass"},
		{"a mode change the claim's own annotation asks for is not allowed", newClaim("restore", "1Gi", fromSnapshot("snap"), func(c *v1.PersistentVolumeClaim) {
			c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
			c.Annotations = map[string]string{snapshotapi.AllowVolumeModeChange: "true"}
		}), nil, explain.RestoreRefused, "annotation is not present on snapshotcontent"},
		{"snapshot being deleted", newClaim("restore", "1Gi", fromSnapshot("snap")), func(f *explain.Facts) {
			f.VolumeSnapshots[0].DeletionTimestamp = ptr.To(f.VolumeSnapshots[0].CreationTimestamp)
		}, explain.RestoreWaiting, "snapshot snap is being deleted"},
		{"another namespace is refused, never read", newClaim("restore", "1Gi", func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "snap", Namespace: ptr.To("victim")}
		}), func(f *explain.Facts) {
			vs := newSnapshot("snap", vsBound(true))
			vs.Namespace = "victim"
			f.VolumeSnapshots = append(f.VolumeSnapshots, vs)
		}, explain.RestoreRefused, "dataSourceRef namespace specified but the CrossNamespaceVolumeDataSource feature is disabled"},
		{"another API group is refused", newClaim("restore", "1Gi", func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSource = &v1.TypedLocalObjectReference{APIGroup: ptr.To("evil.example.com"), Kind: snapshotapi.KindSnapshot, Name: "snap"}
		}), nil, explain.RestoreRefused, "does not belong to the right APIGroup"},
		{"snapshot API not read", newClaim("restore", "1Gi", fromSnapshot("snap")), func(f *explain.Facts) { f.SnapshotsUnread = "snapshot API not installed" },
			explain.RestoreUnchecked, "Not checked: snapshot API not installed."},
		{"a clone of a bound claim of the class", newClaim("copy", "1Gi", func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSource = &v1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "db"}
		}), func(f *explain.Facts) {
			f.Volumes[0].Spec.CSI.Driver = "csi.example.com"
		}, explain.RestoreUsable, "checks pass"},
		{"a clone of a claim that does not exist", newClaim("copy", "1Gi", func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSource = &v1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "nope"}
		}), nil, explain.RestoreWaiting, `data source claim "nope" does not exist`},
		{"a clone of another class's claim", newClaim("copy", "1Gi", claimClass("late"), func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSource = &v1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "db"}
		}), nil, explain.RestoreRefused, `data source claim "db" has class "fast", not "late"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := restoreFacts()
			if tc.change != nil {
				tc.change(f)
			}
			r := explain.Claim(tc.claim, f)
			rs := r.RestoresFrom
			if rs == nil {
				t.Fatal("no Restores from")
			}
			if rs.State != tc.state || !strings.Contains(rs.Summary, tc.summary) {
				t.Errorf("got %s %q, want %s %q", rs.State, rs.Summary, tc.state, tc.summary)
			}
			// A claim of a WaitForFirstConsumer class waits for its pod first.
			if (tc.state == explain.RestoreWaiting || tc.state == explain.RestoreRefused) && r.Next == "Provision" && !strings.HasPrefix(r.Summary, "Restoring from ") {
				t.Errorf("claim summary %q does not say why the restore waits", r.Summary)
			}
			var b bytes.Buffer
			if err := r.Table(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "Restores from:\n") {
				t.Errorf("table:\n%s", b.String())
			}
			if strings.Contains(b.String(), "victim/snap") && tc.state != explain.RestoreRefused {
				t.Errorf("another namespace's snapshot read:\n%s", b.String())
			}
		})
	}
}

func TestRestoresFromTableShowsTheFactsChecked(t *testing.T) {
	c := newClaim("restore", "2Gi", fromSnapshot("snap"), func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock) })
	f := restoreFacts()
	f.Contents[0].Annotations = map[string]string{snapshotapi.AllowVolumeModeChange: "true"}
	var b bytes.Buffer
	if err := explain.Claim(c, f).Table(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  Source:      volumesnapshot ns/snap",
		"  Verdict:     The provisioner's checks pass",
		"  Content:     snapcontent-uid-snap (names ns/snap)",
		"  Driver:      csi.example.com; the claim's class: csi.example.com",
		"  Ready:       yes",
		"  Size:        restore size 1Gi, request 2Gi",
		"  Volume mode: Filesystem to Block; the content's",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	unbound := restoreFacts()
	unbound.VolumeSnapshots[0].Status = nil
	b.Reset()
	if err := explain.Claim(newClaim("restore", "1Gi", fromSnapshot("snap")), unbound).Table(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  Content:     none: the snapshot is not bound to a content yet") {
		t.Errorf("an unbound snapshot:\n%s", b.String())
	}
	if f := explain.Claim(newClaim("plain", "1Gi"), restoreFacts()); f.RestoresFrom != nil {
		t.Errorf("a claim without data source: %+v", f.RestoresFrom)
	}
}
