package invariants

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// inTenant adds to healthy() a claim of namespace "evil" bound to its
// own local volume on node-2.
func inTenant() State {
	s := healthy()
	c := claim("e", "ue", "pv-e")
	c.Namespace = "evil"
	p := pv("pv-e", local, "vol-e", "node-2", v1.PersistentVolumeReclaimDelete, "ue")
	p.Spec.ClaimRef.Namespace = "evil"
	s.Claims = append(s.Claims, c)
	s.PVs = append(s.PVs, p)
	s.Backends[1].VolumeIDs = []string{"vol-e"}
	return s
}

func TestOutsideLeavesOutTheNamespacesClaimsVolumesAndBackends(t *testing.T) {
	out := Outside(inTenant(), "evil")
	for _, c := range out.Claims {
		if c.Namespace == "evil" {
			t.Errorf("claim %s/%s kept", c.Namespace, c.Name)
		}
	}
	for _, p := range out.PVs {
		if p.Name == "pv-e" {
			t.Error("PV pv-e of the namespace kept")
		}
	}
	if ids := out.Backends[1].VolumeIDs; len(ids) != 0 {
		t.Errorf("node-2 volumes kept: %v", ids)
	}
	if len(out.Claims) != 2 || len(out.PVs) != 3 || len(out.Attachments) != 1 {
		t.Errorf("outside = %d claims, %d PVs, %d attachments; want 2, 3, 1", len(out.Claims), len(out.PVs), len(out.Attachments))
	}
}

func TestUnchangedReportsWhatTheTenantTouchedOutsideItsNamespace(t *testing.T) {
	before := Outside(inTenant(), "evil")
	if got := Unchanged(before, before); len(got) != 0 {
		t.Fatalf("a state differs from itself: %q", got)
	}
	for name, tc := range map[string]struct {
		change func(*State)
		want   string
	}{
		"backend volume lost":  {func(s *State) { s.Backends[0].VolumeIDs = nil }, "backend volume vol-a of local.csi on node-1 is gone"},
		"claim gone":           {func(s *State) { s.Claims = s.Claims[1:] }, "claim ns/a (uid ua, Bound) is gone"},
		"claim lost":           {func(s *State) { s.Claims[0].Status.Phase = v1.ClaimLost }, "claim ns/a: phase Bound → Lost"},
		"claim annotated":      {func(s *State) { s.Claims[0].Annotations = map[string]string{"k": "v"} }, `claim ns/a: annotation k "v" added`},
		"PV released":          {func(s *State) { s.PVs[0].Spec.ClaimRef = nil }, "PV pv-a: claimRef ns/c-ua (uid ua) → none"},
		"PV deleted":           {func(s *State) { s.PVs[0].DeletionTimestamp = &metav1.Time{} }, "PV pv-a: being deleted"},
		"PV finalizer dropped": {func(s *State) { s.PVs[0].Finalizers = []string{"x"} }, "PV pv-a: finalizers [] → [x]"},
		"attachment gone":      {func(s *State) { s.Attachments = nil }, "VolumeAttachment va-pv-b-node-1 is gone"},
		"PV appeared": {func(s *State) {
			s.PVs = append(s.PVs, pv("pv-x", local, "vol-x", "", v1.PersistentVolumeReclaimDelete, ""))
		},
			"PV pv-x (claim none) appeared"},
	} {
		t.Run(name, func(t *testing.T) {
			after := Outside(inTenant(), "evil")
			tc.change(&after)
			if got := Unchanged(before, after); !slices.Contains(got, tc.want) {
				t.Errorf("Unchanged = %q, want it to say %q", got, tc.want)
			}
		})
	}
}
