package binding_test

import (
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

const (
	normal  = v1.EventTypeNormal
	warning = v1.EventTypeWarning
)

// ev is an expected claim event: type, reason, message.
type ev struct{ typ, reason, msg string }

type claimCase struct {
	name     string
	in       binding.ClaimInput
	action   binding.ClaimAction
	volume   string // ClaimBind
	class    string // ClaimSetDefaultClass
	provider string // ClaimProvision
	events   []ev
}

func bindCompleted() claimOpt { return claimAnn(storagehelpers.AnnBindCompleted, "yes") }
func boundByController() claimOpt {
	return claimAnn(storagehelpers.AnnBoundByController, "yes")
}

const externalMsg = "Waiting for a volume to be created either by the external provisioner 'csi.example.com' " +
	"or manually by the system administrator. If volume creation is delayed, please verify that " +
	"the provisioner is running and correctly registered."

func TestDecideUnboundClaim(t *testing.T) {
	gold := newClass("gold", "csi.example.com")
	local := newClass("local", "kubernetes.io/no-provisioner", waitForConsumer())
	run(t, []claimCase{
		{
			name:   "a matching volume is bound",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi"), Match: newPV("pv1", "1Gi")},
			action: binding.ClaimBind, volume: "pv1",
		},
		{
			name:   "no match and no class: the default class is assigned",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi"), DefaultClass: gold},
			action: binding.ClaimSetDefaultClass, class: "gold",
		},
		{
			name:   "an explicit empty class is a class: no default, no provisioning",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("")), DefaultClass: gold},
			action: binding.ClaimPending,
			events: []ev{{normal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set"}},
		},
		{
			name:   "no match, no class, no default class",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi")},
			action: binding.ClaimPending,
			events: []ev{{normal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set"}},
		},
		{
			name:   "a class with an external provisioner: annotate the claim and wait",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("gold")), Class: gold, DefaultClass: gold},
			action: binding.ClaimProvision, provider: "csi.example.com",
			events: []ev{{normal, "ExternalProvisioning", externalMsg}},
		},
		{
			name:   "the beta class annotation counts as a class",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimBetaClass("gold")), Class: gold, DefaultClass: newClass("other", "x")},
			action: binding.ClaimProvision, provider: "csi.example.com",
			events: []ev{{normal, "ExternalProvisioning", externalMsg}},
		},
		{
			name:   "a class that does not exist",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("gold"))},
			action: binding.ClaimPending,
			events: []ev{{warning, "ProvisioningFailed", `storageclass.storage.k8s.io "gold" not found`}},
		},
		{
			name:   "an Immediate class that cannot provision",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("static")), Class: newClass("static", "kubernetes.io/no-provisioner")},
			action: binding.ClaimPending,
			events: []ev{{warning, "ProvisioningFailed", "no volume plugin matched name: kubernetes.io/no-provisioner"}},
		},
		{
			name:   "WaitForFirstConsumer without pods",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("local")), Class: local},
			action: binding.ClaimPending,
			events: []ev{{normal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding"}},
		},
		{
			name: "WaitForFirstConsumer names the pod waiting for the scheduler",
			in: binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("local")), Class: local,
				Pods: []*v1.Pod{newPod("web-0"), newPod("done", podSucceeded()), newPod("running", onNode("n1"))}},
			action: binding.ClaimPending,
			events: []ev{{normal, "WaitForPodScheduled", "waiting for pod web-0 to be scheduled"}},
		},
		{
			name: "WaitForFirstConsumer names every pod waiting, sorted",
			in: binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("local")), Class: local,
				Pods: []*v1.Pod{newPod("web-1"), newPod("web-0")}},
			action: binding.ClaimPending,
			events: []ev{{normal, "WaitForPodScheduled", "waiting for pods web-0,web-1 to be scheduled"}},
		},
		{
			name: "WaitForFirstConsumer with a selected node: provision",
			in: binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("topo"), claimAnn(storagehelpers.AnnSelectedNode, "n1")),
				Class: newClass("topo", "csi.example.com", waitForConsumer())},
			action: binding.ClaimProvision, provider: "csi.example.com",
			events: []ev{{normal, "ExternalProvisioning", externalMsg}},
		},
	})
}

func TestDecideClaimThatNamesItsVolume(t *testing.T) {
	claim := func(opts ...claimOpt) *v1.PersistentVolumeClaim {
		return newClaim("c", "2Gi", append([]claimOpt{claimVolume("pv1")}, opts...)...)
	}
	mismatch := func(why string) []ev {
		return []ev{{warning, "VolumeMismatch", `Cannot bind to requested volume "pv1": ` + why}}
	}
	run(t, []claimCase{
		{name: "the volume does not exist yet", in: binding.ClaimInput{Claim: claim()}, action: binding.ClaimPending},
		{
			name:   "a free volume that fits is bound, whatever its labels or phase",
			in:     binding.ClaimInput{Claim: claim(claimSelector("a", "b")), Volume: newPV("pv1", "2Gi", withPhase(v1.VolumeReleased))},
			action: binding.ClaimBind, volume: "pv1",
		},
		{
			name:   "a volume being deleted",
			in:     binding.ClaimInput{Claim: claim(), Volume: newPV("pv1", "5Gi", deleting(), withClass("x"))},
			action: binding.ClaimPending, events: mismatch(`the volume is marked for deletion "pv1"`),
		},
		{
			name:   "too small is reported before a wrong class",
			in:     binding.ClaimInput{Claim: claim(), Volume: newPV("pv1", "1Gi", withClass("x"))},
			action: binding.ClaimPending, events: mismatch("requested PV is too small"),
		},
		{
			name:   "a wrong class",
			in:     binding.ClaimInput{Claim: claim(), Volume: newPV("pv1", "2Gi", withClass("x"), withBlock())},
			action: binding.ClaimPending, events: mismatch("storageClassName does not match"),
		},
		{
			name:   "a wrong attributes class",
			in:     binding.ClaimInput{Claim: claim(), Volume: newPV("pv1", "2Gi", withVAC("x"), withBlock())},
			action: binding.ClaimPending, events: mismatch("volumeAttributesClassName does not match"),
		},
		{
			name:   "a wrong volume mode",
			in:     binding.ClaimInput{Claim: claim(), Volume: newPV("pv1", "2Gi", withBlock(), withModes(RWX))},
			action: binding.ClaimPending, events: mismatch("incompatible volumeMode"),
		},
		{
			name:   "missing access modes",
			in:     binding.ClaimInput{Claim: claim(), Volume: newPV("pv1", "2Gi", withModes(RWX))},
			action: binding.ClaimPending, events: mismatch("incompatible accessMode"),
		},
		{
			name:   "a volume pointing at the claim finishes the bind",
			in:     binding.ClaimInput{Claim: claim(), Volume: newPV("pv1", "2Gi", withPhase(v1.VolumeBound), boundTo("default", "c"))},
			action: binding.ClaimBind, volume: "pv1",
		},
		{
			name:   "a volume bound to another claim",
			in:     binding.ClaimInput{Claim: claim(), Volume: newPV("pv1", "2Gi", boundTo("default", "other"))},
			action: binding.ClaimPending,
			events: []ev{{warning, "FailedBinding", `volume "pv1" already bound to a different claim.`}},
		},
		{
			name:   "bound by the controller to a volume of another claim: report, do not spin",
			in:     binding.ClaimInput{Claim: claim(boundByController()), Volume: newPV("pv1", "2Gi", boundTo("default", "other"))},
			action: binding.ClaimNone,
			events: []ev{{warning, "FailedBinding", `volume "pv1" already bound to a different claim.`}},
		},
	})
}

func TestDecideClaimThatCompletedBinding(t *testing.T) {
	bound := func(opts ...claimOpt) *v1.PersistentVolumeClaim {
		return newClaim("c", "1Gi", append([]claimOpt{bindCompleted(), claimVolume("pv1"), claimPhase(v1.ClaimBound)}, opts...)...)
	}
	run(t, []claimCase{
		{
			name:   "volumeName was removed",
			in:     binding.ClaimInput{Claim: bound(claimVolume(""))},
			action: binding.ClaimLost,
			events: []ev{{warning, "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"}},
		},
		{
			name:   "the volume is gone",
			in:     binding.ClaimInput{Claim: bound()},
			action: binding.ClaimLost,
			events: []ev{{warning, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!"}},
		},
		{
			name:   "an already Lost claim gets no second event",
			in:     binding.ClaimInput{Claim: bound(claimPhase(v1.ClaimLost))},
			action: binding.ClaimLost,
		},
		{
			name:   "the volume lost its claimRef: bind again",
			in:     binding.ClaimInput{Claim: bound(), Volume: newPV("pv1", "1Gi")},
			action: binding.ClaimBind, volume: "pv1",
		},
		{
			name:   "all is well: the bind steps are no-ops",
			in:     binding.ClaimInput{Claim: bound(), Volume: newPV("pv1", "1Gi", boundTo("default", "c"), withPhase(v1.VolumeBound))},
			action: binding.ClaimBind, volume: "pv1",
		},
		{
			name:   "a Lost claim whose volume comes back pointing at it is bound again",
			in:     binding.ClaimInput{Claim: bound(claimPhase(v1.ClaimLost)), Volume: newPV("pv1", "1Gi", boundTo("default", "c"))},
			action: binding.ClaimBind, volume: "pv1",
		},
		{
			name:   "a Lost claim whose volume comes back without a claimRef is bound again",
			in:     binding.ClaimInput{Claim: bound(claimPhase(v1.ClaimLost)), Volume: newPV("pv1", "1Gi", withPhase(v1.VolumePending))},
			action: binding.ClaimBind, volume: "pv1",
		},
		{
			name:   "a Lost claim whose volume comes back for another claim stays Lost, without a second event",
			in:     binding.ClaimInput{Claim: bound(claimPhase(v1.ClaimLost)), Volume: newPV("pv1", "1Gi", boundTo("default", "other"))},
			action: binding.ClaimLost,
		},
		{
			name:   "the volume points at another claim",
			in:     binding.ClaimInput{Claim: bound(), Volume: newPV("pv1", "1Gi", boundTo("default", "other"))},
			action: binding.ClaimLost,
			events: []ev{{warning, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly"}},
		},
		{
			name:   "the volume is pre-bound to the claim's name only",
			in:     binding.ClaimInput{Claim: bound(), Volume: newPV("pv1", "1Gi", preBoundTo("default", "c"))},
			action: binding.ClaimLost,
			events: []ev{{warning, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly"}},
		},
		{
			// bind-completed written by the claim's owner on a new claim
			// (its status is Pending: the API server resets it on create).
			name:   "a forged bind-completed does not take a free volume of another class",
			in:     binding.ClaimInput{Claim: bound(claimPhase(v1.ClaimPending)), Volume: newPV("pv1", "1Gi", withClass("gold"))},
			action: binding.ClaimNone,
			events: []ev{{warning, "VolumeMismatch", `Cannot bind to requested volume "pv1": storageClassName does not match`}},
		},
		{
			name:   "a forged bind-completed does not take a free volume too small",
			in:     binding.ClaimInput{Claim: bound(claimPhase(v1.ClaimPending)), Volume: newPV("pv1", "512Mi")},
			action: binding.ClaimNone,
			events: []ev{{warning, "VolumeMismatch", `Cannot bind to requested volume "pv1": requested PV is too small`}},
		},
		{
			name:   "a forged bind-completed on a claim that fits binds, as a pre-bind would",
			in:     binding.ClaimInput{Claim: bound(claimPhase(v1.ClaimPending)), Volume: newPV("pv1", "1Gi")},
			action: binding.ClaimBind, volume: "pv1",
		},
		{
			name:   "a claim bound once keeps its volume even if it asks for more now (expansion)",
			in:     binding.ClaimInput{Claim: newClaim("c", "5Gi", bindCompleted(), claimVolume("pv1"), claimPhase(v1.ClaimBound)), Volume: newPV("pv1", "1Gi")},
			action: binding.ClaimBind, volume: "pv1",
		},
	})
}

func run(t *testing.T, cases []claimCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := binding.DecideClaim(tc.in)
			if d.Action != tc.action || nameOf(d.Volume) != tc.volume || d.Class != tc.class || d.Provisioner != tc.provider {
				t.Errorf("decision %s; want %s volume=%q class=%q provisioner=%q", d, tc.action, tc.volume, tc.class, tc.provider)
			}
			if got := claimEvents(t, d.Events); !reflect.DeepEqual(got, tc.events) {
				t.Errorf("events\n got %v\nwant %v", got, tc.events)
			}
		})
	}
}

func claimEvents(t *testing.T, events []binding.Event) []ev {
	var out []ev
	for _, e := range events {
		if e.On != binding.OnClaim {
			t.Errorf("event %s is not on the claim", e)
		}
		out = append(out, ev{e.Type, e.Reason, e.Message})
	}
	return out
}

func TestDecideClaimPassesVerdictsThrough(t *testing.T) {
	verdicts := []binding.Verdict{{PV: "pv1", Reason: binding.ReasonTooSmall}}
	d := binding.DecideClaim(binding.ClaimInput{Claim: newClaim("c", "1Gi"), Verdicts: verdicts})
	if !reflect.DeepEqual(d.Verdicts, verdicts) {
		t.Errorf("verdicts %v, want %v", d.Verdicts, verdicts)
	}
}

// A claim that waits in Immediate mode also gets the tally of every volume,
// after the reference's waiting event; the reference's events are unchanged.
func TestDecideReportsWhyNoVolumeFitsAWaitingClaim(t *testing.T) {
	gold := newClass("gold", "csi.example.com")
	local := newClass("local", "kubernetes.io/no-provisioner", waitForConsumer())
	tally := binding.Count([]binding.Verdict{
		{PV: "a", Reason: binding.ReasonTooSmall}, {PV: "b", Reason: binding.ReasonTooSmall},
		{PV: "c", Reason: binding.ReasonBoundToOther},
	}, false, 1)
	const counted = "0/4 volumes available: 2 too small, 1 bound to other claims, 1 other class"
	noVolume := ev{normal, "NoVolumeFits", counted}
	nothing := binding.Count(nil, false, 0)
	reserved := binding.Count([]binding.Verdict{{PV: "a", Reason: binding.ReasonTooSmall}}, true, 0)
	run(t, []claimCase{
		{
			name:   "a class that does not exist",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("gold")), Tally: &tally},
			action: binding.ClaimPending,
			events: []ev{{warning, "ProvisioningFailed", `storageclass.storage.k8s.io "gold" not found`}, noVolume},
		},
		{
			name:   "a class with an external provisioner",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("gold")), Class: gold, Tally: &tally},
			action: binding.ClaimProvision, provider: "csi.example.com",
			events: []ev{{normal, "ExternalProvisioning", externalMsg}, noVolume},
		},
		{
			name:   "no class and no default class",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi"), Tally: &tally},
			action: binding.ClaimPending,
			events: []ev{{normal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set"}, noVolume},
		},
		{
			name:   "no class but a default: the class comes first, the tally with it",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi"), DefaultClass: gold, Tally: &tally},
			action: binding.ClaimSetDefaultClass, class: "gold",
		},
		{
			name:   "WaitForFirstConsumer: the scheduler reports what it considered",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("local")), Class: local, Tally: &tally},
			action: binding.ClaimPending,
			events: []ev{{normal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding"}},
		},
		{
			name: "WaitForFirstConsumer with a selected node: provision, no tally",
			in: binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("topo"), claimAnn(storagehelpers.AnnSelectedNode, "n1")),
				Class: newClass("topo", "csi.example.com", waitForConsumer()), Tally: &tally},
			action: binding.ClaimProvision, provider: "csi.example.com",
			events: []ev{{normal, "ExternalProvisioning", externalMsg}},
		},
		{
			name:   "no volume exists: nothing to count",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("gold")), Class: gold, Tally: &nothing},
			action: binding.ClaimProvision, provider: "csi.example.com",
			events: []ev{{normal, "ExternalProvisioning", externalMsg}},
		},
		{
			name:   "a fitting volume another claim reserved: its bind will tell",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("gold")), Class: gold, Tally: &reserved},
			action: binding.ClaimProvision, provider: "csi.example.com",
			events: []ev{{normal, "ExternalProvisioning", externalMsg}},
		},
		{
			name:   "a match is bound, the tally is not reported",
			in:     binding.ClaimInput{Claim: newClaim("c", "1Gi"), Match: newPV("pv1", "1Gi"), Tally: &reserved},
			action: binding.ClaimBind, volume: "pv1",
		},
	})
}

// The number of volumes of other classes is in the message but is no news
// for the claim: NoVolumeFits events that differ only there are repeats.
func TestNoVolumeFitsIsNewsWhenTheClaimsOwnVolumesChange(t *testing.T) {
	tooSmall := func(n, otherClass int) binding.Event {
		verdicts := make([]binding.Verdict, n)
		for i := range verdicts {
			verdicts[i] = binding.Verdict{PV: fmt.Sprint(i), Reason: binding.ReasonTooSmall}
		}
		tally := binding.Count(verdicts, false, otherClass)
		d := binding.DecideClaim(binding.ClaimInput{Claim: newClaim("c", "1Gi", claimClass("gold")), Tally: &tally})
		for _, e := range d.Events {
			if e.Reason == binding.EventNoVolumeFits {
				return e
			}
		}
		t.Fatalf("no NoVolumeFits event in %s", d)
		return binding.Event{}
	}
	base := tooSmall(2, 1)
	if other := tooSmall(2, 5); other.SituationKey() != base.SituationKey() || other.Message == base.Message {
		t.Errorf("more volumes of other classes: %q vs %q, want one situation, two messages", other, base)
	}
	if more := tooSmall(3, 1); more.SituationKey() == base.SituationKey() {
		t.Errorf("one more too-small volume: %q vs %q, want a new situation", more, base)
	}
}

// A size past int64 wrapped in the reference's Value() comparison: a claim
// asking for 2^64+1Gi bytes, or 1E30, fitted a 1Gi volume it named. Sizes
// are compared rounded up to whole bytes, without wrapping.
func TestCheckRequestedSizePastInt64(t *testing.T) {
	pv := newPV("pv1", "1Gi")
	for size, want := range map[string]binding.Reason{
		"18446744074783293440": binding.ReasonTooSmall,
		"1E30":                 binding.ReasonTooSmall,
		"9223372036854775807k": binding.ReasonTooSmall,
		"1Gi":                  binding.ReasonNone,
		"1073741823.5":         binding.ReasonNone, // rounds up to 1Gi, as Value() does
		"1073741824.5":         binding.ReasonTooSmall,
	} {
		if got := binding.CheckRequested(newClaim("c", size, claimVolume("pv1")), pv); got != want {
			t.Errorf("request %s of a 1Gi volume: %q, want %q", size, got, want)
		}
	}
}
