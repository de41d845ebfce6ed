package provisioning

import (
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

const (
	restoreDriver = "hostpath.csi.volplane.io"
	restoreClass  = "fast"
)

func restoreClaim(mods ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "restored", UID: "claim-uid", Annotations: map[string]string{}},
		Spec: v1.PersistentVolumeClaimSpec{
			DataSource: &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: "VolumeSnapshot", Name: "snap"},
			Resources:  v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("2Gi")}},
			VolumeMode: ptr.To(v1.PersistentVolumeFilesystem),
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

// goodRead is a snapshot bound both ways to a ready content of the driver.
func goodRead() SnapshotRead {
	s := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "snap", UID: "snap-uid"},
		Status: &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To("content"), ReadyToUse: ptr.To(true),
			RestoreSize: ptr.To(resource.MustParse("1Gi"))},
	}
	c := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "content"},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: restoreDriver, SourceVolumeMode: ptr.To(v1.PersistentVolumeFilesystem),
			VolumeSnapshotRef: v1.ObjectReference{Namespace: "ns", Name: "snap", UID: "snap-uid"}},
		Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("backend-snap"), RestoreSize: ptr.To(int64(1 << 30)), ReadyToUse: ptr.To(true)},
	}
	return SnapshotRead{Name: "snap", Snapshot: s, Content: c}
}

func TestRestoreSource(t *testing.T) {
	read := func(mod func(*SnapshotRead)) SnapshotRead {
		r := goodRead()
		mod(&r)
		return r
	}
	inProgress := func(c *v1.PersistentVolumeClaim) { c.Finalizers = []string{ClaimFinalizer} }
	for _, tc := range []struct {
		name  string
		claim *v1.PersistentVolumeClaim
		read  SnapshotRead
		want  string // "" for a restore of backend-snap
		final bool
	}{
		{"bound both ways, ready", restoreClaim(), goodRead(), "", false},
		{"snapshot missing", restoreClaim(), SnapshotRead{Name: "snap", SnapshotErr: errors.New(`volumesnapshots "snap" not found`)},
			`error getting snapshot snap from api server: volumesnapshots "snap" not found`, false},
		{"being deleted, nobody restoring", restoreClaim(), read(func(r *SnapshotRead) { r.Snapshot.DeletionTimestamp = &metav1.Time{} }),
			"snapshot snap is being deleted", false},
		{"being deleted, held by this claim's restore", restoreClaim(inProgress), read(func(r *SnapshotRead) {
			r.Snapshot.DeletionTimestamp = &metav1.Time{}
			r.Snapshot.Finalizers = []string{snapshotapi.ProvisionerSourceFinalizer}
		}), "", false},
		{"being deleted, held for another claim only", restoreClaim(), read(func(r *SnapshotRead) {
			r.Snapshot.DeletionTimestamp = &metav1.Time{}
			r.Snapshot.Finalizers = []string{snapshotapi.ProvisionerSourceFinalizer}
		}), "snapshot snap is being deleted", false},
		{"not bound", restoreClaim(), read(func(r *SnapshotRead) { r.Snapshot.Status = nil }), "snapshot snap not bound", false},
		{"content missing", restoreClaim(), read(func(r *SnapshotRead) { r.Content, r.ContentErr = nil, errors.New("nope") }),
			"error getting snapshotcontent content for snapshot snap", false},
		{"content of another snapshot (UID)", restoreClaim(), read(func(r *SnapshotRead) { r.Content.Spec.VolumeSnapshotRef.UID = "other" }),
			"snapshotcontent content for snapshot snap is bound to a different snapshot", true},
		{"content of another namespace's snapshot", restoreClaim(), read(func(r *SnapshotRead) { r.Content.Spec.VolumeSnapshotRef.Namespace = "victim" }),
			"is bound to a different snapshot", true},
		{"content of another name", restoreClaim(), read(func(r *SnapshotRead) { r.Content.Spec.VolumeSnapshotRef.Name = "other" }),
			"is bound to a different snapshot", true},
		{"content of another driver", restoreClaim(), read(func(r *SnapshotRead) { r.Content.Spec.Driver = "other.csi" }),
			"snapshotcontent content for snapshot snap is not handled by CSI driver of StorageClass fast", true},
		{"not ready", restoreClaim(), read(func(r *SnapshotRead) { r.Snapshot.Status.ReadyToUse = ptr.To(false) }), "snapshot snap is not Ready", false},
		{"no handle yet", restoreClaim(), read(func(r *SnapshotRead) { r.Content.Status.SnapshotHandle = nil }), "snapshot handle snap is not available", false},
		{"request smaller than the snapshot", restoreClaim(func(c *v1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("512Mi")
		}), goodRead(), "requested volume size 536870912 is less than the size 1073741824 for the source snapshot snap", true},
		{"request smaller than the content says, the snapshot says less", restoreClaim(), read(func(r *SnapshotRead) {
			r.Content.Status.RestoreSize = ptr.To(int64(3 << 30))
		}), "is less than the size 3221225472", true},
		{"request larger: the driver grows it", restoreClaim(func(c *v1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("10Gi")
		}), goodRead(), "", false},
		{"mode change, not allowed", restoreClaim(func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock) }),
			goodRead(), "requested volume ns/restored modifies the mode of the source volume but does not have permission to do so. snapshot.storage.kubernetes.io/allow-volume-mode-change annotation is not present on snapshotcontent content", true},
		{"mode change, allowed false", restoreClaim(func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock) }),
			read(func(r *SnapshotRead) {
				r.Content.Annotations = map[string]string{snapshotapi.AllowVolumeModeChange: "false"}
			}), "is set to false on snapshotcontent content", true},
		{"mode change, not a boolean", restoreClaim(func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock) }),
			read(func(r *SnapshotRead) {
				r.Content.Annotations = map[string]string{snapshotapi.AllowVolumeModeChange: "yes please"}
			}), "failed to convert", true},
		{"mode change, allowed by the content", restoreClaim(func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock) }),
			read(func(r *SnapshotRead) {
				r.Content.Annotations = map[string]string{snapshotapi.AllowVolumeModeChange: "true"}
			}), "", false},
		{"mode change asked on the claim is no permission", restoreClaim(func(c *v1.PersistentVolumeClaim) {
			c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
			c.Annotations[snapshotapi.AllowVolumeModeChange] = "true"
		}), goodRead(), "annotation is not present", true},
	} {
		src, err := RestoreSource(tc.claim, tc.read, restoreClass, restoreDriver)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "" && src.GetSnapshot().GetSnapshotId() != "backend-snap":
			t.Errorf("%s: source %v, want snapshot backend-snap", tc.name, src)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		case tc.want != "" && IsFinal(err) != tc.final:
			t.Errorf("%s: final %v, want %v", tc.name, IsFinal(err), tc.final)
		}
	}
}

func TestClaimSource(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*v1.PersistentVolumeClaim)
		kind SourceKind
		want string
	}{
		{"none", func(c *v1.PersistentVolumeClaim) { c.Spec.DataSource = nil }, NoSource, ""},
		{"snapshot", func(*v1.PersistentVolumeClaim) {}, SnapshotSource, ""},
		{"claim", func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSource = &v1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
		}, CloneSource, ""},
		{"snapshot of another group", func(c *v1.PersistentVolumeClaim) { c.Spec.DataSource.APIGroup = ptr.To("example.io") },
			NoSource, "the PVC source does not belong to the right APIGroup. Expected snapshot.storage.k8s.io, Got example.io"},
		{"snapshot of another namespace", func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: "VolumeSnapshot", Name: "snap", Namespace: ptr.To("victim")}
		}, NoSource, "dataSourceRef namespace specified but the CrossNamespaceVolumeDataSource feature is disabled"},
		{"ref naming its own namespace", func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: "VolumeSnapshot", Name: "snap", Namespace: ptr.To("ns")}
		}, SnapshotSource, ""},
	} {
		kind, _, err := ClaimSource(restoreClaim(tc.mod))
		if kind != tc.kind || (tc.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tc.want) || !IsFinal(err))) {
			t.Errorf("%s: %v %v, want %v %q (final)", tc.name, kind, err, tc.kind, tc.want)
		}
	}
	if _, _, err := SourceRefusal(restoreClaim(), Driver{Name: restoreDriver}); err == nil || !strings.Contains(err.Error(), "CREATE_DELETE_SNAPSHOT") {
		t.Errorf("a driver without snapshots: %v", err)
	}
}

func TestSnapshotHolder(t *testing.T) {
	eps := []Endpoint{{NodeID: "a"}, {NodeID: "b"}}
	if i, err := SnapshotHolder("h", eps, []bool{false, true}); i != 1 || err != nil {
		t.Errorf("held by b: %d %v", i, err)
	}
	if _, err := SnapshotHolder("h", eps, []bool{false, false}); err == nil || IsFinal(err) {
		t.Errorf("held by none: %v, want a retry", err)
	}
	if _, err := SnapshotHolder("h", eps, []bool{true, true}); !IsFinal(err) {
		t.Errorf("held by both: %v, want final", err)
	}
}

// Only a claim whose restore is running holds its snapshot: a Pending
// claim refused before any CreateVolume does not (external-provisioner#1507).
func TestSourceHeld(t *testing.T) {
	running := restoreClaim(func(c *v1.PersistentVolumeClaim) { c.Finalizers = []string{ClaimFinalizer}; c.UID = "running" })
	refused := restoreClaim(func(c *v1.PersistentVolumeClaim) { c.UID = "refused" })
	bound := restoreClaim(func(c *v1.PersistentVolumeClaim) {
		c.Finalizers, c.UID, c.Spec.VolumeName, c.Status.Phase = []string{ClaimFinalizer}, "bound", "pv", v1.ClaimBound
	})
	for _, tc := range []struct {
		name   string
		claims []*v1.PersistentVolumeClaim
		except string
		want   bool
	}{
		{"a running restore", []*v1.PersistentVolumeClaim{running}, "", true},
		{"the running restore itself finishing", []*v1.PersistentVolumeClaim{running}, "running", false},
		{"a Pending claim nobody is restoring", []*v1.PersistentVolumeClaim{refused}, "", false},
		{"a Bound claim not yet unmarked", []*v1.PersistentVolumeClaim{bound}, "", false},
	} {
		if got := SourceHeld(tc.claims, SnapshotSource, "snap", types.UID(tc.except)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if SourceHeld([]*v1.PersistentVolumeClaim{running}, SnapshotSource, "other", "") || SourceHeld([]*v1.PersistentVolumeClaim{running}, CloneSource, "snap", "") {
		t.Error("a restore of snap holds another source")
	}
}

// A recorded snapshot source is checked against the snapshot re-derived
// from the claim's data source, never trusted.
func TestRecordedSnapshotIsRederived(t *testing.T) {
	restore := func(id string) *csipb.CreateVolumeRequest {
		r := fillerRequest(1 << 20)
		r.Name, r.VolumeContentSource = "pvc-uid", SnapshotContentSource(id)
		return r
	}
	derived := RecordFacts{Name: "pvc-uid", ClassKnown: true, Params: map[string]string{}, MutableKnown: true, Snapshot: "backend-snap"}
	gone := derived
	gone.Snapshot, gone.SourceErr = "", errors.New("snapshot snap not bound")
	for _, tc := range []struct {
		name string
		rec  *csipb.CreateVolumeRequest
		f    RecordFacts
		want string
	}{
		{"the derived snapshot", restore("backend-snap"), derived, ""},
		{"another tenant's snapshot", restore("victim-snap"), derived, `restores snapshot "victim-snap", but the claim's data source gives "backend-snap"`},
		{"a snapshot that cannot be derived", restore("backend-snap"), gone, "cannot be checked"},
		{"no source for a restore", fillerRequestNamed("pvc-uid"), derived, `gives snapshot "backend-snap"`},
		{"a clone for a restore", func() *csipb.CreateVolumeRequest {
			r := fillerRequestNamed("pvc-uid")
			r.VolumeContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: "victim-vol"}}}
			return r
		}(), derived, `clones volume "victim-vol"`},
	} {
		got := WhyNotOurs(tc.rec, tc.f)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if why := WhyNotOurs(restore("backend-snap"), FactsOf(restore("backend-snap"))); why != "" {
		t.Errorf("a restore's own record: %s", why)
	}
}

func fillerRequestNamed(name string) *csipb.CreateVolumeRequest {
	r := fillerRequest(1 << 20)
	r.Name = name
	return r
}

// A restore is asked only where its node-local snapshot lives: among the
// nodes, only the snapshot's; a selected node elsewhere goes back to the
// scheduler (a final error).
func TestRestoreGoesWhereTheSnapshotLives(t *testing.T) {
	at := SegmentIs(map[string]string{topoKey: "b"})
	in := RequestFacts{Claim: claim(), Class: class(), Driver: Driver{Name: testDriver, Accessibility: true},
		TopologyKeys: []string{topoKey}, Nodes: []*v1.Node{node("a"), node("b"), node("c")}, Snapshot: "snap-1", SourceAt: at}
	req, err := BuildRequest(in)
	if err != nil {
		t.Fatal(err)
	}
	if r := req.GetAccessibilityRequirements().GetRequisite(); len(r) != 1 || r[0].GetSegments()[topoKey] != "b" {
		t.Errorf("requisite %v, want node b only", r)
	}
	if req.GetVolumeContentSource().GetSnapshot().GetSnapshotId() != "snap-1" {
		t.Errorf("content source %v", req.GetVolumeContentSource())
	}
	in.Selected = node("a")
	if _, err := BuildRequest(in); !IsFinal(err) || !strings.Contains(err.Error(), `not accessible from selected node "a"`) {
		t.Errorf("selected node a: %v, want a final refusal", err)
	}
}

// A clone from a claim being deleted is refused as the reference refuses
// it, unless this claim's clone began before and holds the source.
func TestSourceClaimDeleting(t *testing.T) {
	src := claim(deleting)
	src.Name = "src"
	if err := SourceClaimDeleting(claim(), src); err == nil || err.Error() != "the PVC DataSource src is currently being deleted" {
		t.Errorf("a new clone: %v", err)
	}
	src.Finalizers = []string{snapshotapi.CloningFinalizer}
	if err := SourceClaimDeleting(claim(), src); err == nil {
		t.Error("a new clone of a source held for another clone: allowed")
	}
	if err := SourceClaimDeleting(claim(withFinalizer), src); err != nil {
		t.Errorf("a clone begun before: %v", err)
	}
	if err := SourceClaimDeleting(claim(), claim()); err != nil {
		t.Errorf("a source not being deleted: %v", err)
	}
}
