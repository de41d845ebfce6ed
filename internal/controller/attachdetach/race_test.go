package attachdetach

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volplane/volplane/internal/attachment"
)

// The attach/detach tests of workers racing: two nodes' syncs decide on
// facts of one moment and apply later, in every order the informer
// allows. A single-node volume must never get two VolumeAttachments.

// podOn is pod ns/<name> on node using claim.
func podOn(name, node, claim string) *v1.Pod {
	p := podUsing(claim)
	p.Name, p.UID, p.Spec.NodeName = name, types.UID("uid-"+name), node
	return p
}

// decide is one node's decision on the facts the loop reads now: a worker
// that decides now and applies later acts on these facts then.
func (l *fakeLoop) decide(t *testing.T, node string) attachment.Plan {
	t.Helper()
	f, err := l.facts(node, nil)
	if err != nil {
		t.Fatal(err)
	}
	return attachment.Decide(f)
}

// deliver plays the informer delivering the attachments the API server now
// has: into the store, then to the handler, as a shared informer does.
func (l *fakeLoop) deliver(t *testing.T) {
	t.Helper()
	list, err := l.client.StorageV1().VolumeAttachments().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		va := &list.Items[i]
		if _, there, _ := l.vas.Get(va); there {
			continue
		}
		l.cache(t, va)
		l.onAttachment(va)
	}
}

func (l *fakeLoop) attachmentsInAPI(t *testing.T) []storagev1.VolumeAttachment {
	t.Helper()
	list, err := l.client.StorageV1().VolumeAttachments().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// managedNode is a Ready, managed node of that name.
func managedNode(name string) *v1.Node {
	n := node()
	n.Name = name
	return n
}

// A worker decided for node-2 before node-1's attachment existed; node-1's
// worker created it, and the informer delivered it (which ended node-1's
// reservation) before node-2's worker applied its stale plan. The
// attachment the informer shows must stop it.
func TestStaleWorkerDoesNotAttachWhatTheInformerShowsAttachedElsewhere(t *testing.T) {
	claim, pv := boundVolume()
	l := newFakeLoop(t, managedNode("node-1"), managedNode("node-2"), claim, pv,
		podOn("a", "node-1", "data"), podOn("b", "node-2", "data"))
	one, two := l.decide(t, "node-1"), l.decide(t, "node-2")
	if len(one.Create) != 1 || len(two.Create) != 1 {
		t.Fatalf("both nodes should want the volume on the facts of one moment: %d, %d", len(one.Create), len(two.Create))
	}
	_ = l.attach(context.Background(), one)
	l.deliver(t)
	if err := l.attach(context.Background(), two); err == nil {
		t.Error("the stale plan of node-2 was applied without an error")
	}
	if got := l.attachmentsInAPI(t); len(got) != 1 {
		t.Fatalf("%d attachments of a ReadWriteOnce volume, want 1", len(got))
	}
}

// Every order of the four steps of two workers (decide, create, the
// informer's delivery, the other's create) leaves one attachment.
func TestNoInterleavingOfTwoWorkersAttachesASingleNodeVolumeTwice(t *testing.T) {
	type step int
	const (
		apply1 step = iota
		apply2
		deliver
	)
	orders := [][]step{
		{apply1, apply2, deliver}, {apply1, deliver, apply2}, {apply2, apply1, deliver},
		{apply2, deliver, apply1}, {deliver, apply1, apply2}, {apply1, deliver, apply2, deliver},
	}
	for _, order := range orders {
		claim, pv := boundVolume()
		l := newFakeLoop(t, managedNode("node-1"), managedNode("node-2"), claim, pv,
			podOn("a", "node-1", "data"), podOn("b", "node-2", "data"))
		plans := map[step]attachment.Plan{apply1: l.decide(t, "node-1"), apply2: l.decide(t, "node-2")}
		for _, s := range order {
			if s == deliver {
				l.deliver(t)
				continue
			}
			_ = l.attach(context.Background(), plans[s])
		}
		if got := l.attachmentsInAPI(t); len(got) != 1 {
			t.Errorf("order %v: %d attachments, want 1", order, len(got))
		}
	}
}

// A create whose outcome is unknown (a timeout) may have made the
// attachment: the reservation stays until the informer shows it or the API
// server says it is not there.
func TestReservationOutlivesACreateOfUnknownOutcome(t *testing.T) {
	claim, pv := boundVolume()
	l := newFakeLoop(t, managedNode("node-1"), managedNode("node-2"), claim, pv,
		podOn("a", "node-1", "data"), podOn("b", "node-2", "data"))
	one, two := l.decide(t, "node-1"), l.decide(t, "node-2")
	first := true
	l.client.PrependReactor("create", "volumeattachments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !first {
			return false, nil, nil
		}
		first = false
		// The server made it, the answer was lost.
		obj := a.(k8stesting.CreateAction).GetObject()
		if err := l.client.Tracker().Create(storagev1.SchemeGroupVersion.WithResource("volumeattachments"), obj, ""); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewTimeoutError("the create timed out", 1)
	})
	if err := l.attach(context.Background(), one); err == nil {
		t.Fatal("the timed-out create was not an error")
	}
	_ = l.attach(context.Background(), two)
	l.clock.Step(inFlightTTL + time.Second) // the informer is slow
	_ = l.attach(context.Background(), two)
	if got := l.attachmentsInAPI(t); len(got) != 1 {
		t.Fatalf("%d attachments, want 1", len(got))
	}
}

// Two PVs name one backend volume (a PV made again for a retained disk):
// it is one volume for the Multi-Attach rule, in the decision and in the
// reservation.
func TestTwoPVsOfOneVolumeAreAttachedToOneNodeOnly(t *testing.T) {
	claimA, pvA := boundVolume()
	claimB, pvB := boundVolume()
	claimB.Name, claimB.UID, claimB.Spec.VolumeName = "data-b", "claim-b", "pv-b"
	pvB.Name, pvB.Spec.ClaimRef = "pv-b", &v1.ObjectReference{Namespace: "ns", Name: "data-b", UID: "claim-b"}
	t.Run("attached elsewhere through the other PV", func(t *testing.T) {
		l := newFakeLoop(t, managedNode("node-1"), managedNode("node-2"), claimA, pvA, claimB, pvB,
			podOn("b", "node-2", "data-b"))
		va := attachmentOf(true) // pv-data on node-1
		l.cache(t, va)
		if _, err := l.client.StorageV1().VolumeAttachments().Create(context.Background(), va, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if p := l.decide(t, "node-2"); len(p.Create) != 0 {
			t.Errorf("node-2 would attach %s, attached to node-1 as pv-data", *p.Create[0].Attachment.Spec.Source.PersistentVolumeName)
		}
	})
	t.Run("two workers at once", func(t *testing.T) {
		l := newFakeLoop(t, managedNode("node-1"), managedNode("node-2"), claimA, pvA, claimB, pvB,
			podOn("a", "node-1", "data"), podOn("b", "node-2", "data-b"))
		one, two := l.decide(t, "node-1"), l.decide(t, "node-2")
		_ = l.attach(context.Background(), one)
		_ = l.attach(context.Background(), two)
		if got := l.attachmentsInAPI(t); len(got) != 1 {
			t.Errorf("%d attachments of one ReadWriteOnce volume, want 1", len(got))
		}
	})
}

// Handlers run after the store changed, maybe long after: an event about
// an earlier attachment of the same name (an update or the delete of one
// detached before) delivered after node-1 created its new one, which the
// store does not show yet, must not end node-1's reservation.
func TestLateEventOfAnEarlierAttachmentKeepsTheReservation(t *testing.T) {
	for _, late := range []string{"update", "delete"} {
		claim, pv := boundVolume()
		l := newFakeLoop(t, managedNode("node-1"), managedNode("node-2"), claim, pv,
			podOn("a", "node-1", "data"), podOn("b", "node-2", "data"))
		one, two := l.decide(t, "node-1"), l.decide(t, "node-2")
		_ = l.attach(context.Background(), one)
		earlier := one.Create[0].Attachment.DeepCopy()
		earlier.UID, earlier.DeletionTimestamp = "earlier", &metav1.Time{Time: l.clock.Now()}
		if late == "update" {
			l.onAttachment(earlier)
		} else {
			l.onAttachmentDeleted(earlier)
		}
		_ = l.attach(context.Background(), two)
		if got := l.attachmentsInAPI(t); len(got) != 1 {
			t.Errorf("late %s: %d attachments, want 1", late, len(got))
		}
	}
}

// A sync of one node that decided before the informer delivered the
// node's own create, and applies after the handler ended the in-flight
// entry, must not create the attachment again: one create per attach.
func TestSyncDecidedBeforeItsOwnCreateWasDeliveredDoesNotCreateAgain(t *testing.T) {
	claim, pv := boundVolume()
	l := newFakeLoop(t, managedNode("node-1"), claim, pv, podOn("a", "node-1", "data"))
	first := l.decide(t, "node-1")
	if err := l.attach(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	stale := l.decide(t, "node-1") // the store does not show the create yet
	if len(stale.Create) != 1 {
		t.Fatalf("the stale decision should still want the attachment: %d creates", len(stale.Create))
	}
	l.deliver(t) // store, then handler: the in-flight entry ends
	l.client.ClearActions()
	if err := l.attach(context.Background(), stale); err != nil {
		t.Fatal(err)
	}
	for _, a := range l.client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "volumeattachments" {
			t.Errorf("a second create of the attachment the store holds: %v", a)
		}
	}
}
