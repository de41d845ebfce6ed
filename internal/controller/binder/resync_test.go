package binder

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A resync revisits the waiting claims and new PVs not synced lately; those
// synced within the period are skipped, so a large backlog is not re-queued
// every period while it is being worked through.
func TestResyncRevisitsOnlyWhatWasNotSyncedWithinThePeriod(t *testing.T) {
	b := newFakeBinder(t, pendingClaim("fresh", "gold"), pendingClaim("stale", "gold"),
		pending(freeVolume("pv-fresh", "silver")), pending(freeVolume("pv-stale", "silver")))
	queued(b.claimQ) // the informer adds' keys
	queued(b.volumeQ)
	b.resync = time.Minute
	b.claimsSynced.Synced("ns/fresh")
	b.volumesSynced.Synced("pv-fresh")
	b.resyncUnsettled(t.Context())
	if got := queued(b.claimQ); len(got) != 1 || got[0] != "ns/stale" {
		t.Errorf("claims re-queued %v, want only ns/stale", got)
	}
	if got := queued(b.volumeQ); len(got) != 1 || got[0] != "pv-stale" {
		t.Errorf("volumes re-queued %v, want only pv-stale", got)
	}
}

// queued empties a queue without syncing and returns what it held.
func queued(q interface {
	Len() int
	Get() (string, bool)
	Done(string)
}) []string {
	var keys []string
	for q.Len() > 0 {
		key, _ := q.Get()
		q.Done(key)
		keys = append(keys, key)
	}
	return keys
}

// A resync looks only at the objects last seen not at rest: a claim that
// settled (Bound) or was deleted since, and a volume at rest, are not
// re-queued, however long ago they were synced.
func TestResyncSkipsWhatTheLastEventShowedAtRest(t *testing.T) {
	settles, goes := pendingClaim("settles", "gold"), pendingClaim("goes", "gold")
	b := newFakeBinder(t, settles, goes, pendingClaim("waits", "gold"), freeVolume("pv-free", "silver"), pending(freeVolume("pv-new", "silver")))
	queued(b.claimQ)
	queued(b.volumeQ)
	bound := settles.DeepCopy()
	bound.Spec.VolumeName, bound.Status.Phase = "pv-x", v1.ClaimBound
	b.onClaim(bound)
	b.onClaimDeleted(goes)
	queued(b.claimQ)
	queued(b.volumeQ)
	b.resyncUnsettled(t.Context())
	if got := queued(b.claimQ); len(got) != 1 || got[0] != "ns/waits" {
		t.Errorf("claims re-queued %v, want only ns/waits", got)
	}
	if got := queued(b.volumeQ); len(got) != 1 || got[0] != "pv-new" {
		t.Errorf("volumes re-queued %v, want only pv-new", got)
	}
}
