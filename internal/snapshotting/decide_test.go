package snapshotting

import (
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

type mod func(*snapv1.VolumeSnapshotContent)

func content(mods ...mod) *snapv1.VolumeSnapshotContent {
	c := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-u1", Finalizers: []string{snapshotapi.ContentFinalizer}},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: "ns", Name: "snap", UID: "u1"},
			DeletionPolicy:    snapv1.VolumeSnapshotContentDelete, Driver: "d",
			VolumeSnapshotClassName: ptr.To("class"),
			Source:                  snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To("vol-1")},
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func annotate(k string) mod {
	return func(c *snapv1.VolumeSnapshotContent) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[k] = "yes"
	}
}

func deleting(c *snapv1.VolumeSnapshotContent) { c.DeletionTimestamp = &metav1.Time{} }
func taken(ready bool) mod {
	return func(c *snapv1.VolumeSnapshotContent) {
		c.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("snap-id"), ReadyToUse: ptr.To(ready)}
	}
}
func preProvisioned(c *snapv1.VolumeSnapshotContent) {
	c.Spec.Source = snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To("pre-id")}
}
func unbound(c *snapv1.VolumeSnapshotContent) { c.Spec.VolumeSnapshotRef.UID = "" }
func retain(c *snapv1.VolumeSnapshotContent) {
	c.Spec.DeletionPolicy = snapv1.VolumeSnapshotContentRetain
}
func noFinalizer(c *snapv1.VolumeSnapshotContent) { c.Finalizers = []string{"other"} }

func TestDecide(t *testing.T) {
	cases := []struct {
		name    string
		c       *snapv1.VolumeSnapshotContent
		step    Step
		id      string
		pending bool
	}{
		{"dynamic, not taken: create", content(), StepCreate, "", false},
		{"dynamic, taken, not ready: create again (idempotent)", content(taken(false)), StepCreate, "", false},
		{"dynamic with only an error status: create again", content(func(c *snapv1.VolumeSnapshotContent) {
			c.Status = &snapv1.VolumeSnapshotContentStatus{ReadyToUse: ptr.To(false)}
		}), StepCreate, "", false},
		{"ready: nothing", content(taken(true)), StepNone, "", false},
		{"ready with being-created left by a crash: clear it", content(taken(true), annotate(snapshotapi.BeingCreated)), StepClearCreating, "", false},
		{"group member: never created here", content(annotate(snapshotapi.GroupHandleAnnotation)), StepNone, "", false},
		{"group member with handles, not ready: check", content(annotate(snapshotapi.GroupHandleAnnotation), func(c *snapv1.VolumeSnapshotContent) {
			c.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("m1"), VolumeGroupSnapshotHandle: ptr.To("g")}
		}), StepCheck, "m1", false},
		{"pre-provisioned: check", content(preProvisioned), StepCheck, "pre-id", false},
		{"pre-provisioned ready: nothing", content(preProvisioned, taken(true)), StepNone, "", false},
		{"neither handle: nothing", content(func(c *snapv1.VolumeSnapshotContent) { c.Spec.Source = snapv1.VolumeSnapshotContentSource{} }, taken(false),
			func(c *snapv1.VolumeSnapshotContent) { c.Status.SnapshotHandle = nil }), StepNone, "", false},

		{"deleting, being-deleted, Delete: delete the snapshot", content(taken(true), deleting, annotate(snapshotapi.BeingDeleted)), StepDelete, "snap-id", false},
		{"deleting, being-deleted, Retain: release", content(taken(true), deleting, retain, annotate(snapshotapi.BeingDeleted)), StepRelease, "", false},
		{"deleting, being-deleted, never taken: release", content(deleting, annotate(snapshotapi.BeingDeleted), func(c *snapv1.VolumeSnapshotContent) {
			c.Status = &snapv1.VolumeSnapshotContentStatus{ReadyToUse: ptr.To(false)}
		}), StepRelease, "", false},
		{"deleting, being-deleted, group member: release", content(deleting, annotate(snapshotapi.BeingDeleted), func(c *snapv1.VolumeSnapshotContent) {
			c.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("m1"), VolumeGroupSnapshotHandle: ptr.To("g"), ReadyToUse: ptr.To(true)}
		}), StepRelease, "", false},
		{"deleting, released already: nothing", content(taken(true), deleting, noFinalizer, annotate(snapshotapi.BeingDeleted)), StepNone, "", false},
		{"deleting, pre-provisioned, unbound: delete without the annotation", content(preProvisioned, unbound, deleting), StepDelete, "pre-id", false},
		{"deleting, pre-provisioned never checked, being-deleted: the spec's handle is deleted", content(preProvisioned, deleting, annotate(snapshotapi.BeingDeleted)), StepDelete, "pre-id", false},
		// #1446: no being-deleted annotation yet: not released, but not
		// forgotten either (the loop comes back whatever the events).
		{"deleting, no being-deleted yet, ready: wait, pending", content(taken(true), deleting), StepNone, "", true},
		// #1388 / #134: a create that has not answered is finished first.
		{"deleting before any create: none is started, pending", content(deleting), StepNone, "", true},
		{"deleting, taken but not ready, no being-deleted: readiness asked again, pending", content(taken(false), deleting), StepCreate, "", true},
		{"deleting while being-created: the create goes on, pending", content(deleting, annotate(snapshotapi.BeingDeleted), annotate(snapshotapi.BeingCreated)), StepCreate, "", true},
		{"deleting while being-created, ready: clear the annotation first", content(taken(true), deleting, annotate(snapshotapi.BeingDeleted), annotate(snapshotapi.BeingCreated)), StepClearCreating, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.c)
			if p.Step != tc.step || p.SnapshotID != tc.id || p.DeletionPending != tc.pending {
				t.Fatalf("Decide = %+v, want step %s id %q pending %v", p, tc.step, tc.id, tc.pending)
			}
			if p.Reason == "" {
				t.Fatalf("no reason: %+v", p)
			}
		})
	}
}

func TestWithoutFinalizer(t *testing.T) {
	c := content(func(c *snapv1.VolumeSnapshotContent) { c.Finalizers = []string{"a", snapshotapi.ContentFinalizer, "b"} })
	if got := WithoutFinalizer(c); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("WithoutFinalizer = %v", got)
	}
}

func TestServedBy(t *testing.T) {
	labelled := content(func(c *snapv1.VolumeSnapshotContent) { c.Labels = map[string]string{snapshotapi.ManagedByLabel: "n1"} })
	for _, tc := range []struct {
		c    *snapv1.VolumeSnapshotContent
		node string
		want Serving
	}{
		{content(), "", ServeYes}, {labelled, "", ServeYes}, {labelled, "n1", ServeYes},
		{labelled, "n2", ServeNo}, {content(), "n1", ServeIfLocal},
	} {
		if got := ServedBy(tc.c, tc.node); got != tc.want {
			t.Errorf("ServedBy(%v, %q) = %v, want %v", tc.c.Labels, tc.node, got, tc.want)
		}
	}
}
