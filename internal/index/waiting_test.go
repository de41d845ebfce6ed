package index

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/binding"
)

func pendingClaim(name, class string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec:       v1.PersistentVolumeClaimSpec{StorageClassName: &class},
	}
}

func freeVolume(name, class string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{StorageClassName: class,
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
}

// pending makes pv new: no phase written yet.
func pending(pv *v1.PersistentVolume) *v1.PersistentVolume {
	pv.Status.Phase = v1.VolumePending
	return pv
}

// claimFor is a waiting claim of class gold asking for size and modes.
func claimFor(name, size string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
	c := pendingClaim(name, "gold")
	c.Spec.AccessModes = modes
	c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}
	return c
}

// volumeOf is a free PV of class gold holding size and offering modes.
func volumeOf(name, size string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	pv := freeVolume(name, "gold")
	pv.Spec.AccessModes = modes
	pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}
	return pv
}

func always(*v1.PersistentVolumeClaim) bool { return true }

// checked is the fits the controller passes for an Immediate class.
func checked(pv *v1.PersistentVolume) func(*v1.PersistentVolumeClaim) bool {
	return func(claim *v1.PersistentVolumeClaim) bool { return binding.Check(claim, pv, false).Fits() }
}

// wakes wakes with pv and fails the test unless want was woken.
func wakes(t *testing.T, w *Waiting, pv *v1.PersistentVolume, want string) {
	t.Helper()
	if key, ok := w.Wake(pv, checked(pv)); !ok || key != want {
		t.Errorf("%s woke %q, %v; want %s", pv.Name, key, ok, want)
	}
}

// wakesNone wakes with pv and fails the test if a claim was woken.
func wakesNone(t *testing.T, w *Waiting, pv *v1.PersistentVolume, why string) {
	t.Helper()
	if key, ok := w.Wake(pv, checked(pv)); ok {
		t.Errorf("%s woke %q: %s", pv.Name, key, why)
	}
}

const rwo, rwx = v1.ReadWriteOnce, v1.ReadWriteMany

func TestAFreeVolumeWakesTheOldestWaitingClaimOfItsClass(t *testing.T) {
	w := NewWaiting()
	w.Update(pendingClaim("first", "gold"))
	w.Update(pendingClaim("second", "gold"))
	w.Update(pendingClaim("other-class", "silver"))
	if key, ok := w.Wake(freeVolume("pv1", "gold"), always); !ok || key != "ns/first" {
		t.Fatalf("pv1 woke %q, %v; want ns/first", key, ok)
	}
	if key, _ := w.Wake(freeVolume("pv2", "gold"), always); key != "ns/second" {
		t.Errorf("pv2 woke %q, want ns/second: a woken claim is not woken twice while others wait", key)
	}
	if key, _ := w.Wake(freeVolume("pv1", "gold"), always); key != "ns/first" {
		t.Errorf("waking again with pv1 gave %q, want the same claim", key)
	}
	if _, ok := w.Wake(freeVolume("pv3", "bronze"), always); ok {
		t.Error("a PV of a class nobody waits for woke a claim")
	}
}

// A new PV with no idle claim waits on a busy one rather than be written
// Available just before a bind; but one such PV per claim: more would all
// come back at the claim's sync and pile up on the next claim, a cascade
// that made bulk binding quadratic. A PV already Available has no write to
// save and waits on nobody: busy claims search every free PV themselves.
func TestANewVolumeFallsBackToABusyClaimButNeverPilesUp(t *testing.T) {
	w := NewWaiting()
	w.Update(pendingClaim("only", "gold"))
	w.Wake(freeVolume("pv1", "gold"), always)
	if key, ok := w.Wake(pending(freeVolume("pv2", "gold")), always); !ok || key != "ns/only" {
		t.Fatalf("new pv2 woke %q, %v; want the busy claim ns/only", key, ok)
	}
	if key, ok := w.Wake(pending(freeVolume("pv3", "gold")), always); ok {
		t.Errorf("new pv3 woke %q: a claim two PVs woke takes no third", key)
	}
	if key, ok := w.Wake(freeVolume("pv4", "gold"), always); ok {
		t.Errorf("Available pv4 woke %q: it has no write to save by waiting", key)
	}
	got := w.Release("ns/only")
	if len(got) != 2 {
		t.Errorf("release returned %v, want both PVs back", got)
	}
	if key, _ := w.Wake(freeVolume("pv2", "gold"), always); key != "ns/only" {
		t.Errorf("after release the claim can be woken again, got %q", key)
	}
}

func TestAVolumeAlreadyAvailableDoesNotWaitOnABusyClaim(t *testing.T) {
	w := NewWaiting()
	w.Update(claimFor("c", "1Gi"))
	wakes(t, w, volumeOf("pv1", "1Gi"), "ns/c")
	wakesNone(t, w, volumeOf("pv2", "1Gi"), "the only claim is busy and pv2 is Available")
}

// A write's answer can be handled after the informer delivered a later
// change: the older copy changes nothing.
func TestAnOlderCopyOfAWaitingClaimChangesNothing(t *testing.T) {
	w := NewWaiting()
	c := pendingClaim("c", "gold")
	c.ResourceVersion = "7"
	w.Update(c)
	stale := c.DeepCopy()
	stale.ResourceVersion = "6"
	stale.Spec.VolumeName = "pv" // say, a copy from before an unbind
	w.Update(stale)
	if key, _ := w.Wake(freeVolume("pv", "gold"), always); key != "ns/c" {
		t.Errorf("an older copy took the claim out of the queue (woken: %q)", key)
	}
}

func TestClaimsThatAreNoLongerWaitingLeaveTheQueue(t *testing.T) {
	w := NewWaiting()
	c := pendingClaim("c", "gold")
	w.Update(c)
	bound := c.DeepCopy()
	bound.Spec.VolumeName = "pv"
	w.Update(bound)
	if w.Has("ns/c") {
		t.Error("a claim with a volumeName is still waiting")
	}
	w.Update(c)
	moved := pendingClaim("c", "silver")
	w.Update(moved)
	if _, ok := w.Wake(freeVolume("pv", "gold"), always); ok {
		t.Error("a claim that changed class is still offered PVs of its old class")
	}
	if key, _ := w.Wake(freeVolume("pv", "silver"), always); key != "ns/c" {
		t.Errorf("claim not found under its new class, got %q", key)
	}
}

func TestADeletedVolumeStopsHoldingItsClaim(t *testing.T) {
	w := NewWaiting()
	w.Update(pendingClaim("c", "gold"))
	w.Update(pendingClaim("d", "gold"))
	w.Wake(freeVolume("pv", "gold"), always)
	w.ForgetVolume("pv")
	if key, _ := w.Wake(freeVolume("pv2", "gold"), always); key != "ns/c" {
		t.Errorf("claim still busy after its PV was deleted: pv2 woke %q", key)
	}
}

// A claim two PVs woke stays busy until both are gone.
func TestAClaimIsIdleAgainOnceEveryVolumeThatWokeItIsDeleted(t *testing.T) {
	w := NewWaiting()
	w.Update(claimFor("c", "1Gi"))
	wakes(t, w, volumeOf("pv1", "1Gi"), "ns/c")
	wakes(t, w, pending(volumeOf("pv2", "1Gi")), "ns/c") // the fallback: c is busy
	w.Update(claimFor("d", "1Gi"))
	w.ForgetVolume("pv1")
	wakes(t, w, volumeOf("pv3", "1Gi"), "ns/d") // pv2 still holds c
	w.ForgetVolume("pv2")
	wakes(t, w, volumeOf("pv4", "1Gi"), "ns/c")
}

// Matching gives a claim the smallest PV that fits it; a PV wakes the claim
// it is the best fit for, so the big claim is not left for a PV that never
// comes while the small one takes the big PV.
func TestAVolumeWakesTheLargestClaimItCanHoldBeforeAnOlderSmallerOne(t *testing.T) {
	w := NewWaiting()
	w.Update(claimFor("small", "1Gi"))
	w.Update(claimFor("big", "5Gi"))
	w.Update(claimFor("huge", "10Gi"))
	w.Update(claimFor("big-too", "5Gi"))
	wakes(t, w, volumeOf("pv1", "5Gi"), "ns/big")
	wakes(t, w, volumeOf("pv2", "5Gi"), "ns/big-too") // the older of equal requests first
	wakes(t, w, volumeOf("pv3", "5Gi"), "ns/small")
	wakes(t, w, pending(volumeOf("pv4", "5Gi")), "ns/big") // every claim it holds is busy: the best of them
}

func TestAClaimTooBigForTheVolumeIsNotWoken(t *testing.T) {
	w := NewWaiting()
	w.Update(claimFor("c", "2Gi"))
	wakesNone(t, w, volumeOf("pv", "1Gi"), "the claim asks for more than the PV holds")
	wakes(t, w, volumeOf("pv2", "2Gi"), "ns/c")
}

func TestAClaimAskingForModesTheVolumeLacksIsNotWoken(t *testing.T) {
	w := NewWaiting()
	w.Update(claimFor("shared", "1Gi", rwx))
	wakesNone(t, w, volumeOf("pv", "1Gi", rwo), "the PV does not offer ReadWriteMany")
	wakes(t, w, volumeOf("pv2", "1Gi", rwo, rwx), "ns/shared")
}

func TestAClaimOfAnotherVolumeModeOrAttributesClassIsNotWoken(t *testing.T) {
	w := NewWaiting()
	block := claimFor("block", "1Gi")
	mode := v1.PersistentVolumeBlock
	block.Spec.VolumeMode = &mode
	w.Update(block)
	fast := claimFor("fast", "1Gi")
	vac := "fast"
	fast.Spec.VolumeAttributesClassName = &vac
	w.Update(fast)
	wakesNone(t, w, volumeOf("pv", "1Gi"), "a Filesystem PV without attributes class fits neither")
	fastPV := volumeOf("pv-fast", "1Gi")
	fastPV.Spec.VolumeAttributesClassName = &vac
	wakes(t, w, fastPV, "ns/fast")
}

func TestAClaimWhoseRequestChangedIsFoundByItsNewSize(t *testing.T) {
	w := NewWaiting()
	w.Update(claimFor("a", "1Gi"))
	w.Update(claimFor("b", "1Gi"))
	w.Update(claimFor("a", "3Gi"))
	wakes(t, w, volumeOf("pv1", "2Gi"), "ns/b")
	wakes(t, w, volumeOf("pv2", "3Gi"), "ns/a")

	w = NewWaiting()
	w.Update(claimFor("a", "1Gi"))
	w.Update(claimFor("b", "1Gi"))
	w.Update(claimFor("a", "2Gi"))
	w.Update(claimFor("a", "1Gi"))
	wakes(t, w, volumeOf("pv1", "1Gi"), "ns/a") // it kept its place in arrival order
}

func TestReleasedVolumesGoBackAndTheClaimIsIdleAgain(t *testing.T) {
	w := NewWaiting()
	w.Update(claimFor("c", "1Gi"))
	w.Update(claimFor("d", "1Gi"))
	wakes(t, w, volumeOf("pv1", "1Gi"), "ns/c")
	wakes(t, w, volumeOf("pv2", "1Gi"), "ns/d")
	wakes(t, w, pending(volumeOf("pv3", "1Gi")), "ns/c") // both busy: the older
	if got := w.Release("ns/c"); len(got) != 2 || got[0] != "pv1" || got[1] != "pv3" {
		t.Errorf("release returned %v, want [pv1 pv3]", got)
	}
	if got := w.Release("ns/c"); len(got) != 0 {
		t.Errorf("a second release returned %v, want nothing", got)
	}
	wakes(t, w, volumeOf("pv3", "1Gi"), "ns/c") // idle again, and pv3 free to wake anew
}

// A pre-bound PV fits only the claim its claimRef names, whatever that
// claim's class (binding.Check).
func TestAPreBoundVolumeWakesTheClaimItNames(t *testing.T) {
	w := NewWaiting()
	w.Update(claimFor("other", "1Gi"))
	mine := claimFor("mine", "1Gi")
	silver := "silver"
	mine.Spec.StorageClassName = &silver
	w.Update(mine)
	pv := volumeOf("pv", "1Gi")
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "mine"}
	wakes(t, w, pv, "ns/mine")
	pv2 := volumeOf("pv2", "1Gi")
	pv2.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "gone"}
	wakesNone(t, w, pv2, "its claim is not waiting, and it fits no other")
}

func TestAVolumeThatIsNotFreeWakesNoClaim(t *testing.T) {
	w := NewWaiting()
	w.Update(claimFor("c", "1Gi"))
	released := volumeOf("pv", "1Gi")
	released.Status.Phase = v1.VolumeReleased
	wakesNone(t, w, released, "a Released PV is not free")
	pending := volumeOf("pv2", "1Gi")
	pending.Status.Phase = v1.VolumePending
	wakes(t, w, pending, "ns/c")
}

// A claim asking for a mode Kubernetes does not know can match no PV: it is
// waiting, but no PV wakes it.
func TestAClaimThatCanMatchNothingWaitsUnwoken(t *testing.T) {
	w := NewWaiting()
	w.Update(claimFor("odd", "1Gi", "ReadWriteSometimes"))
	if !w.Has("ns/odd") {
		t.Error("the claim is not waiting")
	}
	wakesNone(t, w, volumeOf("pv", "1Gi", rwo), "no PV offers an unknown mode")
}
