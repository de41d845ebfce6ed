package snapshotbinding

import (
	"slices"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

func TestPreProvisionedBinding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content *snapv1.VolumeSnapshotContent
		bind    bool
		event   string
	}{
		{"ref names it without uid: bound", preContent("c", ns, "snap", ""), true, ""},
		{"missing", nil, false, "SnapshotContentMissing"},
		{"ref in another namespace: never bound", preContent("c", "team-b", "snap", ""), false, "SnapshotContentMisbound"},
		{"ref names another snapshot", preContent("c", ns, "other", ""), false, "SnapshotContentMisbound"},
		{"ref uid of an older snapshot of that name", preContent("c", ns, "snap", "uid-old"), false, "SnapshotContentMisbound"},
		{"dynamic content", func() *snapv1.VolumeSnapshotContent {
			c := preContent("c", ns, "snap", "")
			c.Spec.Source = snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To("v")}
			return c
		}(), false, "SnapshotContentMismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := pre("snap", "c")
			p := DecideSnapshot(facts(s, tc.content))
			if (p.Bind != nil) != tc.bind {
				t.Fatalf("plan %+v: bind %v, want %v", p, p.Bind != nil, tc.bind)
			}
			if tc.bind {
				if p.Bind.UID != string(s.UID) || p.Status == nil || *p.Status.BoundVolumeSnapshotContentName != "c" || p.Retry != nil {
					t.Errorf("plan %+v", p)
				}
				if p.Claim != ClaimKeep || p.Create != nil {
					t.Errorf("plan %+v touches a claim or creates", p)
				}
				return
			}
			if p.Retry == nil || !slices.Equal(reasons(p.Events), []string{tc.event}) {
				t.Errorf("plan %+v events %v, want %s and a retry", p, reasons(p.Events), tc.event)
			}
			if p.Status == nil || p.Status.BoundVolumeSnapshotContentName != nil || *p.Status.ReadyToUse {
				t.Errorf("status %+v: must not be bound", p.Status)
			}
		})
	}
}

// A pre-provisioned content whose ref points into another namespace binds
// only to that namespace's snapshot of that name.
func TestPreProvisionedContentBindsOnlyInItsNamespace(t *testing.T) {
	c := preContent("c", "team-b", "snap", "")
	theirs := pre("snap", "c")
	theirs.Namespace = "team-b"
	if p := DecideSnapshot(facts(theirs, c)); p.Bind == nil {
		t.Errorf("team-b's snapshot: plan %+v, want bound", p)
	}
	ours := pre("snap", "c") // team-a, same name
	if p := DecideSnapshot(facts(ours, c)); p.Bind != nil || p.Status == nil || p.Status.BoundVolumeSnapshotContentName != nil {
		t.Errorf("team-a's snapshot: plan %+v, want never bound", p)
	}
	// Once bound to team-b's (uid filled), a recreated team-b snapshot of
	// the same name is refused too.
	c.Spec.VolumeSnapshotRef.UID = theirs.UID
	again := pre("snap", "c")
	again.Namespace, again.UID = "team-b", types.UID("uid-new")
	if p := DecideSnapshot(facts(again, c)); p.Bind != nil || p.Reason != Misbound {
		t.Errorf("recreated snapshot: plan %+v", p)
	}
}

func TestPreProvisionedBoundMirrorsWithoutRebinding(t *testing.T) {
	s := pre("snap", "c", withFinalizers(snapshotapi.AsSourceFinalizer), boundTo("c", false))
	c := preContent("c", ns, "snap", s.UID)
	c.Spec.VolumeSnapshotClassName = ptr.To("snaps")
	c = withStatus(c, true, 5, 0)
	p := DecideSnapshot(facts(s, c))
	if p.Bind != nil || p.Status == nil || !*p.Status.ReadyToUse || len(p.AddFinalizers) != 0 {
		t.Errorf("plan %+v (Retain: no bound finalizer)", p)
	}
}
