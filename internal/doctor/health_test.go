package doctor

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

var dataMissing = []v1.VolumeHealthCondition{{Status: v1.VolumeHealthInaccessible, Reason: "DataMissing", Message: "gone"}}

func healthFindings(r Report) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Kind == KindVolumeUnhealthy {
			out = append(out, f)
		}
	}
	return out
}

func TestUnhealthyVolumeFromTheDriverIsAProblemOnItsClaim(t *testing.T) {
	b := nodeBackend("n1", BackendVolume{ID: "pv-db"})
	b.Health = map[string][]v1.VolumeHealthCondition{"pv-db": dataMissing}
	w := newWorld().claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("db"))).backends(b)
	got := healthFindings(Check(&w.s, thresholds))
	if len(got) != 1 || got[0].Object.Name != "db" || got[0].Severity != SeverityProblem ||
		!strings.Contains(got[0].Problem, "Inaccessible/DataMissing") {
		t.Fatalf("findings = %+v, want one problem on claim db naming Inaccessible/DataMissing", got)
	}
	b.Health = map[string][]v1.VolumeHealthCondition{}
	w = newWorld().claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("db"))).backends(b)
	if got := healthFindings(Check(&w.s, thresholds)); len(got) != 0 {
		t.Errorf("healthy listing: findings = %+v, want none", got)
	}
}

// A claim's status is the user's to read, the monitor's to write; a claim
// that names a volume not bound to it (or is not the one its claimRef
// names) never makes that volume a finding.
func TestUnhealthyFromClaimStatusOnlyForTheVolumesOwnClaim(t *testing.T) {
	sick := func(c *v1.PersistentVolumeClaim) {
		c.Status.HealthStatus = &v1.VolumeHealthStatus{HealthConditions: dataMissing}
	}
	w := newWorld().claims(claim("db", boundTo("pv-db"), sick)).volumes(pv("pv-db", claimRef("db")))
	if got := healthFindings(Check(&w.s, thresholds)); len(got) != 1 || got[0].Object.Name != "db" {
		t.Errorf("findings = %+v, want one on claim db from its status", got)
	}
	w = newWorld().claims(claim("db", boundTo("pv-db")), claim("thief", boundTo("pv-db"), sick)).volumes(pv("pv-db", claimRef("db")))
	if got := healthFindings(Check(&w.s, thresholds)); len(got) != 0 {
		t.Errorf("findings = %+v, want none: the thief's status is not the volume's", got)
	}
}
