package explain_test

import (
	"bytes"
	"io"
	"testing"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/fuzzing"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// FuzzRestoreAndGroupTables: a claim restoring from a snapshot and a group
// snapshot, whatever their tenant-written names, labels, annotations and
// errors, never panic and keep the table's shape.
func FuzzRestoreAndGroupTables(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzing.New(data)
		facts := groupWorld()
		claim := newClaim(in.Word("restore", "db-a"), "1Gi")
		claim.Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(in.Word(snapshotapi.Group, "")),
			Kind: in.Word(snapshotapi.KindSnapshot, "PersistentVolumeClaim"), Name: in.Word("snap", "db-a", in.Raw(90))}
		if in.Bool() {
			claim.Spec.DataSourceRef.Namespace = ptr.To(in.Word("ns", "other", in.Raw(20)))
		}
		claim.Spec.VolumeMode = in.VolumeMode()
		vs := newSnapshot("snap", vsBound(in.Bool()))
		in.Annotate(&vs.ObjectMeta, snapshotapi.AllowVolumeModeChange)
		facts.VolumeSnapshots = append(facts.VolumeSnapshots, vs)
		content := newContent("snap", vscHandle(in.Raw(90), in.Bool()))
		in.Annotate(&content.ObjectMeta, snapshotapi.AllowVolumeModeChange)
		content.Spec.SourceVolumeMode = in.VolumeMode()
		facts.Contents = append(facts.Contents, content)
		render(t, explain.Claim(claim, facts))

		g := newGroup(func(g *vgsv1.VolumeGroupSnapshot) {
			g.Name = in.Word("g", in.Raw(60))
			g.Spec.Source.Selector = in.Selector()
			if in.Bool() {
				g.Spec.VolumeGroupSnapshotClassName = nil
			}
			if in.Bool() {
				g.Status = &vgsv1.VolumeGroupSnapshotStatus{Error: &snapv1.VolumeSnapshotError{Message: ptr.To(in.Raw(200))}}
			}
			if in.Bool() {
				g.DeletionTimestamp = ptr.To(metav1.NewTime(now))
			}
		})
		for _, c := range facts.Claims {
			c.Labels = in.Labels()
		}
		if in.Bool() {
			facts.GroupContents = append(facts.GroupContents, groupContent(taken(in.Bool()), func(c *vgsv1.VolumeGroupSnapshotContent) {
				in.Annotate(&c.ObjectMeta, snapshotapi.GroupBeingCreated, snapshotapi.GroupBeingDeleted)
			}))
			facts.GroupSnapshots = append(facts.GroupSnapshots, g)
			render(t, explain.GroupContent(facts.GroupContents[0], facts))
		}
		render(t, explain.Group(g, facts))
	})
}

// render checks both formats of a report.
func render(t *testing.T, r interface{ Table(io.Writer) error }) {
	t.Helper()
	var b bytes.Buffer
	if err := r.Table(&b); err != nil {
		t.Fatal(err)
	}
	if err := checkTable(b.String()); err != nil {
		t.Fatalf("%T table: %v\n%s", r, err, b.String())
	}
	if err := checkJSON(r); err != nil {
		t.Fatal(err)
	}
}
