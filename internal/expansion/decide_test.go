package expansion

import (
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const (
	ctrlInProgress = v1.PersistentVolumeClaimControllerResizeInProgress
	ctrlInfeasible = v1.PersistentVolumeClaimControllerResizeInfeasible
	nodePending    = v1.PersistentVolumeClaimNodeResizePending
	nodeInProgress = v1.PersistentVolumeClaimNodeResizeInProgress
	nodeInfeasible = v1.PersistentVolumeClaimNodeResizeInfeasible
)

func TestDecideWhetherAndHowFarToExpand(t *testing.T) {
	cases := []struct {
		name   string
		facts  Facts
		action Action
		reason Reason
		size   string // for Expand
	}{
		// Nothing to do.
		{"a pending claim is not expanded",
			facts(claim(requesting("2Mi"), func(c *v1.PersistentVolumeClaim) { c.Status.Phase = v1.ClaimPending }), pv()), None, ReasonNotBound, ""},
		{"a claim without volume name is not expanded",
			facts(claim(requesting("2Mi"), func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "" }), pv()), None, ReasonNotBound, ""},
		{"a PV not in the cache yet: retry",
			facts(claim(requesting("2Mi")), nil), RetryLater, ReasonVolumeNotFound, ""},
		{"a PV of another driver is not ours",
			facts(claim(requesting("2Mi")), pv(), func(f *Facts) { f.Served = false }), None, ReasonNotOurs, ""},
		{"a PV without CSI source is not ours",
			facts(claim(requesting("2Mi")), pv(func(p *v1.PersistentVolume) { p.Spec.CSI = nil })), None, ReasonNotOurs, ""},
		{"a driver that expands nowhere",
			facts(claim(requesting("2Mi")), pv(), func(f *Facts) { f.ControllerExpand, f.NodeExpand = false, false }), None, ReasonCannotExpand, ""},
		{"a PV bound to another claim (another UID)",
			facts(claim(requesting("2Mi")), pv(func(p *v1.PersistentVolume) { p.Spec.ClaimRef.UID = "u2" })), None, ReasonBoundElsewhere, ""},
		{"a request equal to the capacity",
			facts(claim(), pv()), None, ReasonNoRequest, ""},
		{"a request below the capacity (the API refuses it; we never act on it)",
			facts(claim(requesting("512Ki")), pv()), None, ReasonNoRequest, ""},

		// PV smaller than the request.
		{"a first expansion asks for the request",
			facts(claim(requesting("2Mi")), pv()), Expand, ReasonRequested, "2Mi"},
		{"after a user lowered an infeasible request, the new request",
			facts(claim(requesting("2Mi"), allocated("2Pi"), resizeStatus(ctrlInfeasible)), pv()), Expand, ReasonRequested, "2Mi"},
		{"in progress without a final error: finish the size started",
			facts(claim(requesting("3Mi"), allocated("2Mi"), resizeStatus(ctrlInProgress)), pv()), Expand, ReasonResumeAllocated, "2Mi"},
		{"in progress after a final error: the request (recovery)",
			facts(claim(requesting("3Mi"), allocated("2Mi"), resizeStatus(ctrlInProgress)), pv(), finalErrorSeen), Expand, ReasonRequested, "3Mi"},
		{"node pending on a size the PV has: wait for the node",
			facts(claim(requesting("3Mi"), allocated("2Mi"), resizeStatus(nodePending)), pv(sized("2Mi"))), None, ReasonNodeExpansionDue, ""},
		{"node in progress on a size the PV lacks: finish the controller part",
			facts(claim(requesting("3Mi"), allocated("2Mi"), resizeStatus(nodeInProgress)), pv()), Expand, ReasonResumeAllocated, "2Mi"},
		{"node infeasible: the size allocated, not the new request",
			facts(claim(requesting("3Mi"), allocated("2Mi"), resizeStatus(nodeInfeasible)), pv()), Expand, ReasonResumeAllocated, "2Mi"},

		// PV already as large as the request.
		{"node pending: nothing (a spurious update)",
			facts(claim(requesting("2Mi"), allocated("2Mi"), resizeStatus(nodePending)), pv(sized("2Mi"))), None, ReasonNodeExpansionDue, ""},
		{"node in progress: nothing",
			facts(claim(requesting("2Mi"), allocated("2Mi"), resizeStatus(nodeInProgress)), pv(sized("2Mi"))), None, ReasonNodeExpansionDue, ""},
		{"crashed after the PV write: resume to finish the claim",
			facts(claim(requesting("2Mi"), allocated("2Mi"), resizeStatus(ctrlInProgress)), pv(sized("2Mi"))), Expand, ReasonResumeAllocated, "2Mi"},
		{"node infeasible with controller expansion: the allocated size",
			facts(claim(requesting("2Mi"), allocated("2Mi"), resizeStatus(nodeInfeasible)), pv(sized("2Mi"))), Expand, ReasonResumeAllocated, "2Mi"},
		{"node infeasible, node-only driver: the request",
			facts(claim(requesting("3Mi"), allocated("2Mi"), resizeStatus(nodeInfeasible)), pv(sized("3Mi")), nodeOnly), Expand, ReasonRequested, "3Mi"},
		{"a legacy FileSystemResizePending without status: wait for the node",
			facts(claim(requesting("2Mi"), withCondition(v1.PersistentVolumeClaimFileSystemResizePending, "")), pv(sized("2Mi"))), None, ReasonNodeExpansionDue, ""},

		// Never shrink.
		{"allocated below the PV (the driver gave more): ask for the PV's size",
			facts(claim(requesting("2Mi"), allocated("2Mi"), resizeStatus(ctrlInProgress)), pv(sized("4Mi"))), Expand, ReasonVolumeCapacity, "4Mi"},
		{"a user shrank the request below an expanded PV: no less than the PV",
			facts(claim(requesting("3Mi"), resizeStatus(ctrlInfeasible)), pv(sized("4Mi"))), Expand, ReasonVolumeCapacity, "4Mi"},

		// Backing off.
		{"the same infeasible size before its slow retry is due",
			facts(claim(requesting("2Pi"), allocated("2Pi"), resizeStatus(ctrlInfeasible)), pv(), infeasibleBackoff), RetryLater, ReasonInfeasibleBackoff, ""},
		{"a lowered request is tried at once despite the slow retry",
			facts(claim(requesting("2Mi"), allocated("2Pi"), resizeStatus(ctrlInfeasible)), pv(), infeasibleBackoff), Expand, ReasonRequested, "2Mi"},
		{"an offline-only driver while a pod uses the claim",
			facts(claim(requesting("2Mi")), pv(), func(f *Facts) { f.OfflineInUse = true }), RetryLater, ReasonOfflineInUse, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.facts)
			if d.Action != tc.action || d.Reason != tc.reason {
				t.Fatalf("got %v, want %v: %v", d, tc.action, tc.reason)
			}
			if tc.action == Expand && d.Size.Cmp(qty(tc.size)) != 0 {
				t.Errorf("size %s, want %s", d.Size.String(), tc.size)
			}
			if d.Reason.Message() == "" {
				t.Errorf("reason %s has no message", d.Reason)
			}
		})
	}
}

// Whatever the claim's status says, an expansion never asks for less than
// the volume has: volumes only grow.
func TestNoDecisionShrinksAVolume(t *testing.T) {
	sizes := []string{"1Mi", "2Mi", "3Mi", "4Mi", "1Gi"}
	statuses := []v1.ClaimResourceStatus{"", ctrlInProgress, ctrlInfeasible, nodePending, nodeInProgress, nodeInfeasible}
	pick := func(r *rand.Rand) string { return sizes[r.IntN(len(sizes))] }
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		c := claim(requesting(pick(r)), resizeStatus(statuses[r.IntN(len(statuses))]))
		c.Status.Capacity[v1.ResourceStorage] = qty(pick(r))
		if r.IntN(4) > 0 {
			allocated(pick(r))(c)
		}
		p := pv(sized(pick(r)))
		f := facts(c, p, func(f *Facts) {
			f.FinalErrorSeen, f.InfeasibleBackoff, f.ControllerExpand = r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0
		})
		d := Decide(f)
		pvSize := p.Spec.Capacity[v1.ResourceStorage]
		if d.Action == Expand && d.Size.Cmp(pvSize) < 0 {
			t.Fatalf("shrinks: PV %s, decision %v, claim status %+v request %s", pvSize.String(), d, c.Status,
				c.Spec.Resources.Requests.Storage().String())
		}
	}
}

func TestDecideReadsButNeverChangesItsFacts(t *testing.T) {
	c := claim(requesting("2Mi"), allocated("2Mi"), resizeStatus(ctrlInProgress))
	p := pv(sized("4Mi"))
	before, beforePV := c.DeepCopy(), p.DeepCopy()
	Decide(facts(c, p))
	if !equalClaims(c, before) || p.Spec.Capacity.Storage().Cmp(*beforePV.Spec.Capacity.Storage()) != 0 {
		t.Error("Decide changed its facts")
	}
}

func equalClaims(a, b *v1.PersistentVolumeClaim) bool {
	return a.String() == b.String()
}

// A size no CSI request can carry (above the largest int64) is refused as
// infeasible, never wrapped or saturated into another size.
func TestSizeBeyondInt64IsInfeasible(t *testing.T) {
	for name, f := range map[string]Facts{
		"a request of 2^64 + 1Gi":  facts(claim(requesting("18446744074783293440")), pv()),
		"a request of 2^63":        facts(claim(requesting("9223372036854775808")), pv()),
		"a request of 1e30":        facts(claim(requesting("1e30")), pv()),
		"an allocated size beyond": facts(claim(requesting("2Mi"), allocated("18446744074783293440"), resizeStatus(ctrlInProgress)), pv()),
	} {
		t.Run(name, func(t *testing.T) {
			d := Decide(f)
			if d.Action != Infeasible || d.Reason != ReasonSizeBeyondInt64 {
				t.Errorf("Decide = %v, want Infeasible: %s", d, ReasonSizeBeyondInt64)
			}
		})
	}
	largest := facts(claim(requesting("9223372036854775807")), pv())
	if d := Decide(largest); d.Action != Expand {
		t.Errorf("the largest int64 is a size a driver can be asked for: %v", d)
	}
}
