package grouping

import (
	"time"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/snapshotapi"
)

const (
	driver = "hostpath.csi.volplane.io"
	ns     = "team-a"
)

var now = time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC)

func group(mut ...func(*vgsv1.VolumeGroupSnapshot)) *vgsv1.VolumeGroupSnapshot {
	g := &vgsv1.VolumeGroupSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "grp", Namespace: ns, UID: "g-uid"},
		Spec: vgsv1.VolumeGroupSnapshotSpec{
			Source:                       vgsv1.VolumeGroupSnapshotSource{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
			VolumeGroupSnapshotClassName: ptr("grp-class"),
		},
	}
	for _, m := range mut {
		m(g)
	}
	return g
}

func class(name string, def bool, params map[string]string) *vgsv1.VolumeGroupSnapshotClass {
	c := &vgsv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: driver, Parameters: params,
		DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	if def {
		c.Annotations = map[string]string{snapshotapi.DefaultGroupClassAnnotation: "true"}
	}
	return c
}

// claimAndPV is a Bound claim of namespace ns with labels and its CSI PV.
func claimAndPV(namespace, name string, lbls map[string]string) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(name + "-uid"), Labels: lbls},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pv-" + namespace + "-" + name},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
	block := v1.PersistentVolumeFilesystem
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: c.Spec.VolumeName},
		Spec: v1.PersistentVolumeSpec{
			ClaimRef:   &v1.ObjectReference{Namespace: namespace, Name: name, UID: c.UID},
			VolumeMode: &block,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: "vol-" + namespace + "-" + name}},
		},
	}
	return c, pv
}

// facts has two claims of ns labelled app=db, one unlabelled, and one of
// another namespace labelled app=db.
func facts(g *vgsv1.VolumeGroupSnapshot) GroupFacts {
	f := GroupFacts{Group: g, Classes: []*vgsv1.VolumeGroupSnapshotClass{class("grp-class", true, nil)},
		Volumes: map[string]*v1.PersistentVolume{}, Snapshots: map[string]*snapv1.VolumeSnapshot{},
		MemberContents: map[string]*snapv1.VolumeSnapshotContent{}, Now: now}
	for _, c := range []struct {
		ns, name string
		lbls     map[string]string
	}{{ns, "db-1", map[string]string{"app": "db"}}, {ns, "db-0", map[string]string{"app": "db"}}, {ns, "web", nil},
		{"team-b", "db-0", map[string]string{"app": "db"}}} {
		claim, pv := claimAndPV(c.ns, c.name, c.lbls)
		f.Claims = append(f.Claims, claim)
		f.Volumes[pv.Name] = pv
	}
	return f
}

// content is the dynamic content DecideGroup makes for group(), bound.
func content(g *vgsv1.VolumeGroupSnapshot, mut ...func(*vgsv1.VolumeGroupSnapshotContent)) *vgsv1.VolumeGroupSnapshotContent {
	c := &vgsv1.VolumeGroupSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: snapshotapi.GroupContentName(g.UID), Finalizers: []string{snapshotapi.GroupContentFinalizer}},
		Spec: vgsv1.VolumeGroupSnapshotContentSpec{
			VolumeGroupSnapshotRef:       v1.ObjectReference{Kind: GroupKind, Namespace: g.Namespace, Name: g.Name, UID: g.UID},
			DeletionPolicy:               snapv1.VolumeSnapshotContentDelete,
			Driver:                       driver,
			VolumeGroupSnapshotClassName: ptr("grp-class"),
			Source:                       vgsv1.VolumeGroupSnapshotContentSource{VolumeHandles: []string{"vol-team-a-db-0", "vol-team-a-db-1"}},
		},
	}
	for _, m := range mut {
		m(c)
	}
	return c
}

// answered gives the content the driver's answer for both volumes.
func answered(ready bool) func(*vgsv1.VolumeGroupSnapshotContent) {
	return func(c *vgsv1.VolumeGroupSnapshotContent) {
		t := metav1.NewTime(now)
		c.Status = &vgsv1.VolumeGroupSnapshotContentStatus{VolumeGroupSnapshotHandle: ptr("gsh"), ReadyToUse: ptr(ready), CreationTime: &t,
			VolumeSnapshotInfoList: []vgsv1.VolumeSnapshotInfo{
				{VolumeHandle: "vol-team-a-db-0", SnapshotHandle: "snap-0", ReadyToUse: ptr(true), RestoreSize: ptr(int64(1 << 20)), CreationTime: ptr(now.UnixNano())},
				{VolumeHandle: "vol-team-a-db-1", SnapshotHandle: "snap-1", ReadyToUse: ptr(true), RestoreSize: ptr(int64(1 << 20)), CreationTime: ptr(now.UnixNano())},
			}}
	}
}

func bound(g *vgsv1.VolumeGroupSnapshot) {
	g.Finalizers = []string{snapshotapi.GroupBoundFinalizer}
}

func typesUID(s string) types.UID { return types.UID(s) }
