package snapshotbinding

import (
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

func TestHolds(t *testing.T) {
	s := dyn("snap", withClass("snaps"), boundTo("snapcontent-uid-snap", false))
	failed := func(creating bool) *snapv1.VolumeSnapshotContent {
		c := dynContent(s)
		c.Status = &snapv1.VolumeSnapshotContentStatus{Error: &snapv1.VolumeSnapshotError{Message: ptr.To("boom")}}
		if creating {
			c.Annotations = map[string]string{snapshotapi.BeingCreated: "yes"}
		}
		return c
	}
	foreign := dynContent(s)
	foreign.Spec.VolumeSnapshotRef.Namespace = "team-b"
	for _, tc := range []struct {
		name    string
		s       *snapv1.VolumeSnapshot
		content *snapv1.VolumeSnapshotContent
		want    bool
	}{
		{"content being made", s, dynContent(s), true},
		{"no content (cannot be made): external-snapshotter #1305", s, nil, false},
		{"content failed", s, failed(false), false},
		{"content failed, CreateSnapshot in flight", s, failed(true), true},
		{"ready", s, withStatus(dynContent(s), true, 1, 1), false},
		{"content of another namespace", s, foreign, false},
		{"pre-provisioned", pre("snap", "c"), preContent("c", ns, "snap", "uid-snap"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Holds(tc.s, tc.content); got != tc.want {
				t.Errorf("Holds = %v, want %v", got, tc.want)
			}
		})
	}
}

// A snapshot whose content failed releases its claim (the reference keeps
// it until the snapshot is deleted, external-snapshotter #1305).
func TestFailedSnapshotReleasesItsClaim(t *testing.T) {
	s := dyn("snap", withClass("snaps"), withFinalizers(snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer),
		boundTo("snapcontent-uid-snap", false))
	c := dynContent(s)
	c.Status = &snapv1.VolumeSnapshotContentStatus{Error: &snapv1.VolumeSnapshotError{Message: ptr.To("driver said no")}}
	f := facts(s, c)
	f.Claim.Finalizers = []string{snapshotapi.ClaimFinalizer}
	p := DecideSnapshot(f)
	if p.Claim != ClaimRemoveFinalizer {
		t.Errorf("claim step %v, want released", p.Claim)
	}
	if p.Status == nil || *p.Status.Error.Message != "driver said no" {
		t.Errorf("status %+v: want the content's error mirrored", p.Status)
	}
}
