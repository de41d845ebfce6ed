package binding_test

import (
	v1 "k8s.io/api/core/v1"

	"testing"

	"github.com/volplane/volplane/internal/binding"
)

func TestCountSaysHowManyVolumesFitAndWhyTheOthersDoNot(t *testing.T) {
	claim := newClaim("data", "10Gi")
	candidates := []*v1.PersistentVolume{
		newPV("small-1", "1Gi"), newPV("small-2", "2Gi"), newPV("small-3", "5Gi"),
		newPV("taken", "20Gi", boundTo("other", "db")),
		newPV("block", "20Gi", withBlock()),
	}
	chosen, verdicts := binding.Match(claim, candidates, false)
	if chosen != nil {
		t.Fatalf("chose %s, want none", chosen.Name)
	}
	got := binding.Count(verdicts, false, 4)
	want := "0/9 volumes available: 4 other class, 3 too small, 1 bound to other claims, 1 other volume mode"
	if got.String() != want {
		t.Errorf("tally = %q\nwant    %q", got, want)
	}
}

func TestCountCountsTheChosenVolumeAndTheFittingLosers(t *testing.T) {
	claim := newClaim("data", "1Gi")
	candidates := []*v1.PersistentVolume{newPV("a", "1Gi"), newPV("b", "2Gi"), newPV("c", "1Gi", withModes(RWO, RWX))}
	chosen, verdicts := binding.Match(claim, candidates, false)
	if chosen == nil || chosen.Name != "a" {
		t.Fatalf("chose %v, want a", chosen)
	}
	want := "3/3 volumes available: 1 fit with more access modes, 1 fit but larger"
	if got := binding.Count(verdicts, true, 0).String(); got != want {
		t.Errorf("tally = %q\nwant    %q", got, want)
	}
}

func TestCountOfNothingSaysNoVolumesExist(t *testing.T) {
	if got := binding.Count(nil, false, 0).String(); got != "no volumes exist" {
		t.Errorf("tally = %q", got)
	}
	if got := binding.Count(nil, false, 1).String(); got != "0/1 volume available: 1 other class" {
		t.Errorf("tally = %q", got)
	}
}

func TestEveryReasonHasACountedPhrase(t *testing.T) {
	for _, r := range binding.Reasons() {
		if r.Short() == string(r) {
			t.Errorf("reason %s has no counted phrase", r)
		}
	}
}

func TestWithOtherClassCountsAsIfMatchWasHandedThoseVolumes(t *testing.T) {
	verdicts := []binding.Verdict{{PV: "a", Reason: binding.ReasonTooSmall}, {PV: "b", Reason: binding.ReasonTooSmall}}
	for _, n := range []int{0, 1, 2, 3} {
		want := binding.Count(verdicts, false, n)
		if got := binding.Count(verdicts, false, 0).WithOtherClass(n); got.String() != want.String() {
			t.Errorf("%d more: %q, want %q", n, got, want)
		}
	}
	if got := binding.Count(verdicts, false, 0).WithOtherClass(3).String(); got != "0/5 volumes available: 3 other class, 2 too small" {
		t.Errorf("tally = %q", got)
	}
}
