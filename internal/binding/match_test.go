package binding_test

import (
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
)

type R = binding.Reason

// matchCase: given PVs and a claim, the chosen PV ("" for none) and the reason
// each other PV was passed over.
type matchCase struct {
	name   string
	claim  *v1.PersistentVolumeClaim
	pvs    []*v1.PersistentVolume
	delay  bool
	chosen string
	why    map[string]R
}

func TestMatchPicksLikeKubernetes(t *testing.T) {
	cases := []matchCase{
		{
			name:   "the smallest PV that is large enough wins",
			claim:  newClaim("c", "2Gi"),
			pvs:    []*v1.PersistentVolume{newPV("small", "1Gi"), newPV("big", "10Gi"), newPV("fit", "3Gi")},
			chosen: "fit",
			why:    map[string]R{"small": binding.ReasonTooSmall, "big": binding.ReasonLargerThanChosen},
		},
		{
			name:   "equal capacities are broken by name",
			claim:  newClaim("c", "1Gi"),
			pvs:    []*v1.PersistentVolume{newPV("pv-b", "1Gi"), newPV("pv-a", "1Gi")},
			chosen: "pv-a",
			why:    map[string]R{"pv-b": binding.ReasonNotChosen},
		},
		{
			name:   "capacities compare by value, not by spelling",
			claim:  newClaim("c", "1Gi"),
			pvs:    []*v1.PersistentVolume{newPV("mib", "1024Mi"), newPV("gb", "1G")},
			chosen: "mib",
			why:    map[string]R{"gb": binding.ReasonTooSmall},
		},
		{
			name:   "a claim without class only gets PVs without class",
			claim:  newClaim("c", "1Gi"),
			pvs:    []*v1.PersistentVolume{newPV("gold", "1Gi", withClass("gold")), newPV("none", "5Gi")},
			chosen: "none",
			why:    map[string]R{"gold": binding.ReasonClassMismatch},
		},
		{
			name:   "a claim with class gets only PVs of that class",
			claim:  newClaim("c", "1Gi", claimClass("gold")),
			pvs:    []*v1.PersistentVolume{newPV("none", "1Gi"), newPV("silver", "1Gi", withClass("silver")), newPV("gold", "1Gi", withClass("gold"))},
			chosen: "gold",
			why:    map[string]R{"none": binding.ReasonClassMismatch, "silver": binding.ReasonClassMismatch},
		},
		{
			name:   "the beta class annotation wins over spec.storageClassName on both sides",
			claim:  newClaim("c", "1Gi", claimClass("silver"), claimBetaClass("gold")),
			pvs:    []*v1.PersistentVolume{newPV("spec-gold", "1Gi", withClass("gold"), withBetaClass("silver")), newPV("beta-gold", "1Gi", withClass("silver"), withBetaClass("gold"))},
			chosen: "beta-gold",
			why:    map[string]R{"spec-gold": binding.ReasonClassMismatch},
		},
		{
			name:   "an unset volume mode means Filesystem",
			claim:  newClaim("c", "1Gi"),
			pvs:    []*v1.PersistentVolume{newPV("block", "1Gi", withBlock()), newPV("fs", "2Gi", withFilesystem())},
			chosen: "fs",
			why:    map[string]R{"block": binding.ReasonVolumeModeMismatch},
		},
		{
			name:   "a Block claim gets only Block PVs",
			claim:  newClaim("c", "1Gi", claimBlock()),
			pvs:    []*v1.PersistentVolume{newPV("fs", "1Gi"), newPV("block", "1Gi", withBlock())},
			chosen: "block",
			why:    map[string]R{"fs": binding.ReasonVolumeModeMismatch},
		},
		{
			name:   "the volume attributes class must be equal",
			claim:  newClaim("c", "1Gi", claimVAC("fast")),
			pvs:    []*v1.PersistentVolume{newPV("plain", "1Gi"), newPV("slow", "1Gi", withVAC("slow")), newPV("fast", "1Gi", withVAC("fast"))},
			chosen: "fast",
			why:    map[string]R{"plain": binding.ReasonAttributesClassMismatch, "slow": binding.ReasonAttributesClassMismatch},
		},
		{
			name:   "the group with fewest access modes wins even with a larger PV",
			claim:  newClaim("c", "1Gi"),
			pvs:    []*v1.PersistentVolume{newPV("rwo-rox", "1Gi", withModes(RWO, ROX)), newPV("rwo", "5Gi", withModes(RWO))},
			chosen: "rwo",
			why:    map[string]R{"rwo-rox": binding.ReasonMoreAccessModes},
		},
		{
			name:   "a later group is searched when the first has no fit",
			claim:  newClaim("c", "3Gi"),
			pvs:    []*v1.PersistentVolume{newPV("rwo", "1Gi", withModes(RWO)), newPV("rwo-rwx", "5Gi", withModes(RWX, RWO))},
			chosen: "rwo-rwx",
			why:    map[string]R{"rwo": binding.ReasonTooSmall},
		},
		{
			name:   "a PV must offer every requested mode",
			claim:  newClaim("c", "1Gi", claimModes(RWO, ROX)),
			pvs:    []*v1.PersistentVolume{newPV("rwo", "1Gi"), newPV("rox", "1Gi", withModes(ROX)), newPV("both", "1Gi", withModes(ROX, RWO, RWX))},
			chosen: "both",
			why:    map[string]R{"rwo": binding.ReasonAccessModes, "rox": binding.ReasonAccessModes},
		},
		{
			name:   "a claim asking for an unknown mode matches nothing",
			claim:  newClaim("c", "1Gi", claimModes(RWO, "ReadSometimes")),
			pvs:    []*v1.PersistentVolume{newPV("rwo", "1Gi")},
			chosen: "",
			why:    map[string]R{"rwo": binding.ReasonAccessModes},
		},
		{
			name:   "a PV pre-bound to the claim wins at once over a smaller one",
			claim:  newClaim("c", "1Gi"),
			pvs:    []*v1.PersistentVolume{newPV("small", "1Gi"), newPV("mine", "5Gi", preBoundTo("default", "c"))},
			chosen: "mine",
			why:    map[string]R{"small": binding.ReasonNotChosen},
		},
		{
			name:   "a pre-bound PV in a later access-mode group loses to a fit in an earlier one",
			claim:  newClaim("c", "1Gi"),
			pvs:    []*v1.PersistentVolume{newPV("rwo", "5Gi"), newPV("mine", "1Gi", withModes(RWO, RWX), preBoundTo("default", "c"))},
			chosen: "rwo",
			why:    map[string]R{"mine": binding.ReasonMoreAccessModes},
		},
		{
			name:  "a pre-bound PV ignores class, selector and phase (a half-done bind is finished)",
			claim: newClaim("c", "1Gi", claimClass("gold"), claimSelector("tier", "a")),
			pvs: []*v1.PersistentVolume{
				newPV("half-done", "1Gi", withPhase(v1.VolumeBound), boundTo("default", "c")),
				newPV("free", "1Gi", withClass("gold"), withLabels("tier", "a")),
			},
			chosen: "half-done",
			why:    map[string]R{"free": binding.ReasonNotChosen},
		},
		{
			name:   "a pre-bound PV must still be large enough",
			claim:  newClaim("c", "2Gi"),
			pvs:    []*v1.PersistentVolume{newPV("mine", "1Gi", preBoundTo("default", "c"))},
			chosen: "",
			why:    map[string]R{"mine": binding.ReasonTooSmall},
		},
		{
			name:  "PVs claimed by others are skipped",
			claim: newClaim("c", "1Gi"),
			pvs: []*v1.PersistentVolume{
				newPV("reserved", "1Gi", preBoundTo("default", "other")),
				newPV("taken", "1Gi", boundTo("default", "other")),
				newPV("old-c", "1Gi", boundToUID("default", "c", "uid-of-deleted-c")),
				newPV("other-ns", "1Gi", preBoundTo("prod", "c")),
			},
			chosen: "",
			why: map[string]R{"reserved": binding.ReasonPreBoundToOther, "taken": binding.ReasonBoundToOther,
				"old-c": binding.ReasonBoundToOther, "other-ns": binding.ReasonPreBoundToOther},
		},
		{
			name:   "a PV being deleted is never taken, pre-bound or not",
			claim:  newClaim("c", "1Gi"),
			pvs:    []*v1.PersistentVolume{newPV("going", "1Gi", deleting()), newPV("mine-going", "1Gi", deleting(), preBoundTo("default", "c"))},
			chosen: "",
			why:    map[string]R{"going": binding.ReasonBeingDeleted, "mine-going": binding.ReasonBeingDeleted},
		},
		{
			name:  "free PVs must be Available or Pending (Pending is how the API server creates them)",
			claim: newClaim("c", "1Gi"),
			pvs: []*v1.PersistentVolume{
				newPV("released", "1Gi", withPhase(v1.VolumeReleased)),
				newPV("failed", "1Gi", withPhase(v1.VolumeFailed)),
				newPV("new", "2Gi", withPhase(v1.VolumePending)),
			},
			chosen: "new",
			why:    map[string]R{"released": binding.ReasonNotAvailable, "failed": binding.ReasonNotAvailable},
		},
		{
			name:   "the label selector filters free PVs",
			claim:  newClaim("c", "1Gi", claimSelector("tier", "fast")),
			pvs:    []*v1.PersistentVolume{newPV("slow", "1Gi", withLabels("tier", "slow")), newPV("fast", "9Gi", withLabels("tier", "fast", "x", "y"))},
			chosen: "fast",
			why:    map[string]R{"slow": binding.ReasonSelector},
		},
		{
			name:   "WaitForFirstConsumer never binds an unbound PV",
			claim:  newClaim("c", "1Gi", claimClass("local")),
			pvs:    []*v1.PersistentVolume{newPV("local", "1Gi", withClass("local"))},
			delay:  true,
			chosen: "",
			why:    map[string]R{"local": binding.ReasonWaitForFirstConsumer},
		},
		{
			name:   "WaitForFirstConsumer still takes a PV pre-bound to the claim",
			claim:  newClaim("c", "1Gi", claimClass("local")),
			pvs:    []*v1.PersistentVolume{newPV("free", "1Gi", withClass("local")), newPV("picked", "1Gi", withClass("local"), preBoundTo("default", "c"))},
			delay:  true,
			chosen: "picked",
			why:    map[string]R{"free": binding.ReasonWaitForFirstConsumer},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runMatchCase(t, tc) })
	}
}

func runMatchCase(t *testing.T, tc matchCase) {
	t.Helper()
	chosen, verdicts := binding.Match(tc.claim, tc.pvs, tc.delay)
	if got := nameOf(chosen); got != tc.chosen {
		t.Fatalf("chosen %q, want %q (verdicts %+v)", got, tc.chosen, verdicts)
	}
	got := map[string]R{}
	for _, v := range verdicts {
		got[v.PV] = v.Reason
	}
	if len(got) != len(tc.why) {
		t.Fatalf("verdicts %+v, want reasons %v", verdicts, tc.why)
	}
	for pv, want := range tc.why {
		if got[pv] != want {
			t.Errorf("%s: reason %q, want %q (verdicts %+v)", pv, got[pv], want, verdicts)
		}
	}
	for _, pv := range tc.pvs {
		if pv.Name != tc.chosen && binding.Check(tc.claim, pv, tc.delay) != ReasonOrFit(got[pv.Name]) {
			t.Errorf("Check(%s) = %q disagrees with Match's %q", pv.Name, binding.Check(tc.claim, pv, tc.delay), got[pv.Name])
		}
	}
}

// ReasonOrFit maps the "lost to a better PV" reasons to ReasonNone: Check sees
// one PV and cannot know about the others.
func ReasonOrFit(r R) R {
	if r.Fits() {
		return binding.ReasonNone
	}
	return r
}

func nameOf(pv *v1.PersistentVolume) string {
	if pv == nil {
		return ""
	}
	return pv.Name
}

func TestMatchGivesEveryOtherPVAVerdictSortedByName(t *testing.T) {
	pvs := []*v1.PersistentVolume{newPV("z", "1Gi"), newPV("a", "5Gi", withClass("x")), newPV("m", "2Gi"), newPV("b", "1Gi", withBlock())}
	chosen, verdicts := binding.Match(newClaim("c", "1Gi"), pvs, false)
	if nameOf(chosen) != "z" {
		t.Fatalf("chosen %q, want z", nameOf(chosen))
	}
	if len(verdicts) != len(pvs)-1 {
		t.Fatalf("%d verdicts for %d PVs", len(verdicts), len(pvs))
	}
	if !sort.SliceIsSorted(verdicts, func(i, j int) bool { return verdicts[i].PV < verdicts[j].PV }) {
		t.Errorf("verdicts not sorted by name: %+v", verdicts)
	}
	for _, v := range verdicts {
		if v.Reason.Message() == "" || v.Reason == binding.ReasonNone {
			t.Errorf("verdict without reason: %+v", v)
		}
	}
}

func TestMatchRejectsEveryPVForAnInvalidSelector(t *testing.T) {
	claim := newClaim("c", "1Gi", claimSelector("a", "b"))
	claim.Spec.Selector.MatchExpressions = append(claim.Spec.Selector.MatchExpressions,
		metav1LabelSelectorRequirement("a", "BadOperator"))
	chosen, verdicts := binding.Match(claim, []*v1.PersistentVolume{newPV("mine", "1Gi", preBoundTo("default", "c"))}, false)
	if chosen != nil || len(verdicts) != 1 || verdicts[0].Reason != binding.ReasonInvalidSelector {
		t.Fatalf("chosen %v verdicts %+v, want InvalidSelector", nameOf(chosen), verdicts)
	}
}

func TestEveryReasonHasAMessage(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range binding.Reasons() {
		m := r.Message()
		if m == "" || seen[m] || m == "unknown reason "+string(r) {
			t.Errorf("reason %q: message %q missing or duplicated", r, m)
		}
		seen[m] = true
	}
}

func TestModeSetsAreSearchedFewestModesFirst(t *testing.T) {
	order := binding.GroupOrder()
	if len(order) != 16 {
		t.Fatalf("%d sets, want 16", len(order))
	}
	for i := 1; i < len(order); i++ {
		if order[i-1].Len() > order[i].Len() {
			t.Errorf("%s before %s", order[i-1], order[i])
		}
		if order[i].Rank() != i {
			t.Errorf("rank of %s = %d, want %d", order[i], order[i].Rank(), i)
		}
	}
	set, unknown := binding.ModesOf([]v1.PersistentVolumeAccessMode{RWX, RWO, RWO})
	if set.String() != "RWO,RWX" || unknown {
		t.Errorf("ModesOf = %s unknown=%v, want RWO,RWX", set, unknown)
	}
}
