package snapshotbinding

import (
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

const (
	driver = "hostpath.csi.volplane.io"
	ns     = "team-a"
)

func class(name, drv string, isDefault bool, params map[string]string) *snapv1.VolumeSnapshotClass {
	c := &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: drv,
		DeletionPolicy: snapv1.VolumeSnapshotContentDelete, Parameters: params}
	if isDefault {
		c.Annotations = map[string]string{snapshotapi.DefaultClassAnnotation: "true"}
	}
	return c
}

// dyn is a dynamic snapshot of claim "data" in ns.
func dyn(name string, opts ...func(*snapv1.VolumeSnapshot)) *snapv1.VolumeSnapshot {
	s := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// pre is a pre-provisioned snapshot naming content.
func pre(name, content string, opts ...func(*snapv1.VolumeSnapshot)) *snapv1.VolumeSnapshot {
	s := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To(content)}}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func withClass(c string) func(*snapv1.VolumeSnapshot) {
	return func(s *snapv1.VolumeSnapshot) { s.Spec.VolumeSnapshotClassName = ptr.To(c) }
}

func withFinalizers(f ...string) func(*snapv1.VolumeSnapshot) {
	return func(s *snapv1.VolumeSnapshot) { s.Finalizers = f }
}

func deleting(s *snapv1.VolumeSnapshot) { s.DeletionTimestamp = &metav1.Time{Time: now} }

func boundTo(content string, ready bool) func(*snapv1.VolumeSnapshot) {
	return func(s *snapv1.VolumeSnapshot) {
		s.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To(content), ReadyToUse: ptr.To(ready)}
	}
}

func claim(opts ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data", UID: "claim-uid"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	for _, o := range opts {
		o(c)
	}
	return c
}

func volume() *corev1.PersistentVolume {
	mode := corev1.PersistentVolumeFilesystem
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data"}, Spec: corev1.PersistentVolumeSpec{
		VolumeMode: &mode,
		ClaimRef:   &corev1.ObjectReference{Namespace: ns, Name: "data", UID: "claim-uid"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: driver, VolumeHandle: "vol-1"}}}}
}

// dynContent is the dynamic content of s.
func dynContent(s *snapv1.VolumeSnapshot) *snapv1.VolumeSnapshotContent {
	return &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: snapshotapi.ContentName(s.UID), UID: "content-uid"},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: s.Namespace, Name: s.Name, UID: s.UID},
			Source:            snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To("vol-1")},
			DeletionPolicy:    snapv1.VolumeSnapshotContentDelete, Driver: driver,
			VolumeSnapshotClassName: ptr.To("snaps")}}
}

// preContent is a pre-provisioned content whose ref names refNS/refName.
func preContent(name, refNS, refName string, uid types.UID) *snapv1.VolumeSnapshotContent {
	return &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "pre-uid"},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: refNS, Name: refName, UID: uid},
			Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To("backend-handle")},
			DeletionPolicy:    snapv1.VolumeSnapshotContentRetain, Driver: driver}}
}

func withStatus(c *snapv1.VolumeSnapshotContent, ready bool, created int64, size int64) *snapv1.VolumeSnapshotContent {
	c.Status = &snapv1.VolumeSnapshotContentStatus{ReadyToUse: ptr.To(ready), SnapshotHandle: ptr.To("h")}
	if created != 0 {
		c.Status.CreationTime = ptr.To(created)
	}
	if size != 0 {
		c.Status.RestoreSize = ptr.To(size)
	}
	return c
}

func facts(s *snapv1.VolumeSnapshot, c *snapv1.VolumeSnapshotContent) SnapshotFacts {
	return SnapshotFacts{Now: now, Snapshot: s, Content: c, Claim: claim(), Volume: volume(),
		Classes: []*snapv1.VolumeSnapshotClass{class("snaps", driver, true, nil), class("other", "other.csi", true, nil)}}
}

func reasons(events []Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}
