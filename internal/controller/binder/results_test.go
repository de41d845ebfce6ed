package binder

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// The runner owns the recycler's retries: a sync that starts a scrub asks
// for the volume again at the pod's deadline, and one that finds our pod
// running asks for it again, instead of queuing its own key.
func TestARecyclerIsLookedAtAgainThroughTheSyncsResult(t *testing.T) {
	b := newFakeBinder(t, releasedRecycleVolume(""))
	for b.volumeQ.Len() > 0 { // what the informer's add queued
		name, _ := b.volumeQ.Get()
		b.volumeQ.Done(name)
	}
	r, err := b.syncVolume(ctx, "pv1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.RequeueAfter(), DefaultRecycleTimeout+time.Second; got != want {
		t.Errorf("after starting the recycler: again after %v, want %v", got, want)
	}
	if b.apiRecyclerPod(t) == nil {
		t.Fatal("no recycler pod created")
	}
	r, err = b.syncVolume(ctx, "pv1")
	if err != nil {
		t.Fatal(err)
	}
	if r.RequeueAfter() <= 0 {
		t.Errorf("while our pod runs: %+v, want a later look", r)
	}
	if b.volumeQ.Len() != 0 {
		t.Errorf("%d keys queued by the syncs themselves", b.volumeQ.Len())
	}
}

// A sync that cannot read the pods using its claim fails (and is retried by
// the runner) rather than deciding as if no pod used it: a volume still in
// use could be recycled, a waiting claim would name no pod.
func TestASyncThatCannotReadThePodsFails(t *testing.T) {
	claim := claimFor("c", "1Gi", rwo)
	claim.UID = "claim-uid"
	pv := volumeOf("pv", "1Gi", rwo)
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "c", UID: claim.UID}
	pv.Status.Phase = v1.VolumeBound
	b := newFakeBinder(t, claim, pv)
	b.pods = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}) // no claim index
	writes := len(b.client.Actions())
	if _, err := b.syncClaim(ctx, "ns/c"); err == nil {
		t.Error("claim sync succeeded without reading the pods")
	}
	if _, err := b.syncVolume(ctx, "pv"); err == nil {
		t.Error("volume sync succeeded without reading the pods")
	}
	if n := len(b.client.Actions()) - writes; n != 0 {
		t.Errorf("%d API calls made by syncs that could not read the pods", n)
	}
}
