package binder

import (
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/index"
)

// tallyWorld is a claim of class gold for 10Gi that no PV fits: two too
// small, one bound to another claim, one of another class. No class gold
// exists, so it also waits with the reference's ProvisioningFailed.
func tallyWorld(t *testing.T) *fakeBinder {
	taken := volumeOf("taken", "20Gi", rwo)
	taken.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "other", UID: "other"}
	taken.Status.Phase = v1.VolumeBound
	silver := volumeOf("silver", "20Gi", rwo)
	silver.Spec.StorageClassName = "silver"
	b := newFakeBinder(t, claimFor("data", "10Gi", rwo),
		volumeOf("small-1", "1Gi", rwo), volumeOf("small-2", "2Gi", rwo), taken, silver)
	return b
}

const goldNotFound = `Warning ProvisioningFailed storageclass.storage.k8s.io "gold" not found`

// recorded drains the events recorded so far.
func (b *fakeBinder) recorded() []string {
	var out []string
	for {
		select {
		case e := <-b.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (b *fakeBinder) syncClaimOK(t *testing.T, key string) {
	t.Helper()
	if _, err := b.syncClaim(ctx, key); err != nil {
		t.Fatalf("sync claim %s: %v", key, err)
	}
}

func (b *fakeBinder) wantRecorded(t *testing.T, when string, want ...string) {
	t.Helper()
	if got := b.recorded(); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: recorded %q\nwant %q", when, got, want)
	}
}

// A claim that has waited a resync period says once why no volume fits,
// counted by reason, next to the reference's waiting event; a resync that
// finds the same situation records nothing, and a new volume of its class
// is news once it has stayed for a resync period.
func TestAWaitingClaimReportsWhyNoVolumeFitsOncePerSituation(t *testing.T) {
	b := tallyWorld(t)
	b.syncClaimOK(t, "ns/data")
	b.wantRecorded(t, "first sync", goldNotFound)
	b.nextResync(t)
	b.wantRecorded(t, "a resync period later",
		"Normal NoVolumeFits 0/4 volumes available: 2 too small, 1 bound to other claims, 1 other class")

	for range 3 {
		b.nextResync(t)
	}
	b.wantRecorded(t, "resyncs without change")

	b.informerAdds(t, volumeOf("small-3", "5Gi", rwo))
	b.nextResync(t)
	b.wantRecorded(t, "a resync right after a new volume")
	b.nextResync(t)
	b.wantRecorded(t, "a resync period after the new volume",
		"Normal NoVolumeFits 0/5 volumes available: 3 too small, 1 bound to other claims, 1 other class")
}

// counted is tallyWorld once the claim waited a resync period and reported
// its tally; the events so far are drained.
func counted(t *testing.T) *fakeBinder {
	b := tallyWorld(t)
	b.syncClaimOK(t, "ns/data")
	b.nextResync(t)
	if evs := b.recorded(); len(evs) != 2 {
		t.Fatalf("recorded %q, want ProvisioningFailed and NoVolumeFits", evs)
	}
	return b
}

// While the PVs of its class keep changing, a waiting claim is not counted
// again at each resync (a Match over the class each time, an event each
// time): only once they stayed for a period, or after index.MaxStaleResyncs
// periods.
func TestAClaimIsNotRecountedWhileItsClassKeepsChanging(t *testing.T) {
	b := counted(t)
	for i := range 5 {
		b.informerAdds(t, volumeOf(fmt.Sprintf("tiny-%d", i), "1Mi", rwo))
		b.nextResync(t)
	}
	b.wantRecorded(t, "resyncs while volumes keep arriving")
	b.nextResync(t)
	b.wantRecorded(t, "once they stopped for a period",
		"Normal NoVolumeFits 0/9 volumes available: 7 too small, 1 bound to other claims, 1 other class")

	for i := range index.MaxStaleResyncs {
		if i == index.MaxStaleResyncs-1 {
			b.wantRecorded(t, "while volumes keep arriving for almost index.MaxStaleResyncs periods")
		}
		b.informerAdds(t, volumeOf(fmt.Sprintf("more-%d", i), "1Mi", rwo))
		b.nextResync(t)
	}
	b.wantRecorded(t, "after index.MaxStaleResyncs periods of change",
		fmt.Sprintf("Normal NoVolumeFits 0/%d volumes available: %d too small, 1 bound to other claims, 1 other class",
			9+index.MaxStaleResyncs, 7+index.MaxStaleResyncs))
}

// nextResync plays a resync period passing, then the claim's resync.
func (b *fakeBinder) nextResync(t *testing.T) {
	t.Helper()
	b.clock.Step(b.Controller.resync)
	b.syncClaimOK(t, "ns/data")
}

// Volumes of other classes are counted in the message, but their number
// changing is no news for the claim: no event until its own volumes change.
func TestVolumesOfOtherClassesAloneAreNoNews(t *testing.T) {
	b := counted(t)
	silver2 := volumeOf("silver-2", "20Gi", rwo)
	silver2.Spec.StorageClassName = "silver"
	b.informerAdds(t, silver2)
	b.nextResync(t)
	b.nextResync(t)
	b.wantRecorded(t, "another volume of another class")

	b.informerDeletes(t, b.index.Get("small-1"))
	b.nextResync(t)
	b.nextResync(t)
	b.wantRecorded(t, "a too-small volume gone",
		"Normal NoVolumeFits 0/4 volumes available: 2 other class, 1 bound to other claims, 1 too small")
}

// The reference's waiting event comes back once its situation does, after
// a sync that had none: one waiting event leaving does not mute the others.
func TestAWaitingEventIsNewsAgainAfterASyncWithoutIt(t *testing.T) {
	m := loop.NewEventMemory()
	external := binding.Event{On: binding.OnClaim, Type: v1.EventTypeNormal, Reason: binding.EventExternalProvisioning, Message: "wait", Repeats: true}
	tally := func(msg string) binding.Event {
		return binding.Event{On: binding.OnClaim, Type: v1.EventTypeNormal, Reason: binding.EventNoVolumeFits, Message: msg, Repeats: true}
	}
	steps := []struct {
		events []binding.Event
		want   []string
	}{
		{[]binding.Event{external, tally("a")}, []string{"wait", "a"}},
		{[]binding.Event{external, tally("a")}, nil},
		{[]binding.Event{external, tally("b")}, []string{"b"}},
		{[]binding.Event{external}, nil},
		{[]binding.Event{external, tally("b")}, []string{"b"}},
		{nil, nil},
		{[]binding.Event{external, tally("b")}, []string{"wait", "b"}},
	}
	for i, s := range steps {
		var got []string
		for _, e := range dueEvents(m, "uid", fromClaimSync, s.events) {
			got = append(got, e.Message)
		}
		if !reflect.DeepEqual(got, s.want) {
			t.Errorf("sync %d: recorded %q, want %q", i+1, got, s.want)
		}
	}
}

// The volume sync's waiting events on a claim and the claim sync's own do
// not make each other news again.
func TestClaimAndVolumeSyncsRememberTheirEventsApart(t *testing.T) {
	m := loop.NewEventMemory()
	mismatch := binding.Event{On: binding.OnClaim, Type: v1.EventTypeWarning, Reason: binding.EventVolumeMismatch, Message: "mode", Repeats: true}
	external := binding.Event{On: binding.OnClaim, Type: v1.EventTypeNormal, Reason: binding.EventExternalProvisioning, Message: "wait", Repeats: true}
	for i := range 3 {
		n := len(dueEvents(m, "uid", fromVolumeSync, []binding.Event{mismatch})) + len(dueEvents(m, "uid", fromClaimSync, []binding.Event{external}))
		if want := map[bool]int{true: 2, false: 0}[i == 0]; n != want {
			t.Errorf("round %d: %d events recorded, want %d", i+1, n, want)
		}
	}
}

// Deleting a waiting claim forgets its events and its tally: nothing is
// kept for claims that are gone.
func TestADeletedClaimLeavesNothingRemembered(t *testing.T) {
	b := tallyWorld(t)
	b.syncClaimOK(t, "ns/data")
	if b.events.Len() == 0 || b.tallies.Len() == 0 {
		t.Fatalf("nothing remembered for a waiting claim: events %d, tallies %d", b.events.Len(), b.tallies.Len())
	}
	claim, err := b.claims.PersistentVolumeClaims("ns").Get("data")
	if err != nil {
		t.Fatal(err)
	}
	b.informerDeletes(t, claim)
	if b.events.Len() != 0 || b.tallies.Len() != 0 {
		t.Errorf("after delete: events %d, tallies %d", b.events.Len(), b.tallies.Len())
	}
}

// A claim that finds a volume forgets its tally; its bind is no waiting
// state, and a later wait is news again.
func TestABoundClaimForgetsItsTally(t *testing.T) {
	b := counted(t)
	big := volumeOf("big", "10Gi", rwo)
	if _, err := b.client.CoreV1().PersistentVolumes().Create(ctx, big, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.informerAdds(t, big)
	b.syncClaimOK(t, "ns/data")
	if n := b.tallies.Len(); n != 0 {
		t.Errorf("tallies after the bind: %d", n)
	}
	b.wantRecorded(t, "the bind")
}

// While a count waits for the class to settle, the last tally is reported
// as it was counted: the new PVs of the claim's class are not mistaken for
// PVs of other classes.
func TestAWaitingCountReportsTheLastTallyAsItWas(t *testing.T) {
	b := counted(t)
	b.informerAdds(t, volumeOf("small-3", "5Gi", rwo))
	claim := b.newClaim.Newer("ns/data", claimFor("data", "10Gi", rwo))
	want := "0/4 volumes available: 2 too small, 1 bound to other claims, 1 other class"
	if got := b.tally(claim).String(); got != want {
		t.Errorf("tally while the count waits: %q, want %q", got, want)
	}
}
