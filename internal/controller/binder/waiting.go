package binder

import (
	"container/list"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

// waitingClaims holds the claims still looking for a volume (no volumeName,
// binding not completed), oldest first per class, and which of them a free
// PV has woken. A free PV wakes one claim it fits, not all of them: with a
// thousand claims waiting, waking all for every new PV would be a thousand
// syncs per PV. A woken claim that did not take its PV hands it back
// (release), and the PV wakes the next claim.
//
// Not safe for concurrent use; the controller holds its mutex.
type waitingClaims struct {
	byClass map[string]*list.List // of *waitingClaim, oldest first
	byKey   map[string]*list.Element
	// wokenFor: claim key → PVs that woke it and wait for its sync.
	wokenFor map[string][]string
	// woke: PV name → the claim it woke.
	woke map[string]string
}

type waitingClaim struct {
	key   string
	class string
	claim *v1.PersistentVolumeClaim
}

func newWaitingClaims() *waitingClaims {
	return &waitingClaims{byClass: map[string]*list.List{}, byKey: map[string]*list.Element{},
		wokenFor: map[string][]string{}, woke: map[string]string{}}
}

// isWaiting says whether a claim is still looking for a volume.
func isWaiting(claim *v1.PersistentVolumeClaim) bool {
	return claim.DeletionTimestamp == nil && claim.Spec.VolumeName == "" &&
		!metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted)
}

// update adds, refreshes or removes a claim after it changed.
func (w *waitingClaims) update(claim *v1.PersistentVolumeClaim) {
	key := binding.ClaimKey(claim)
	if !isWaiting(claim) {
		w.remove(key)
		return
	}
	class := binding.ClaimClass(claim)
	if el, ok := w.byKey[key]; ok {
		wc := el.Value.(*waitingClaim)
		if wc.class == class {
			wc.claim = claim
			return
		}
		w.remove(key) // a new class: queue it behind that class's claims
	}
	l := w.byClass[class]
	if l == nil {
		l = list.New()
		w.byClass[class] = l
	}
	w.byKey[key] = l.PushBack(&waitingClaim{key: key, class: class, claim: claim})
}

func (w *waitingClaims) remove(key string) {
	el, ok := w.byKey[key]
	if !ok {
		return
	}
	delete(w.byKey, key)
	class := el.Value.(*waitingClaim).class
	if l := w.byClass[class]; l != nil {
		l.Remove(el)
		if l.Len() == 0 {
			delete(w.byClass, class)
		}
	}
}

func (w *waitingClaims) has(key string) bool {
	_, ok := w.byKey[key]
	return ok
}

func (w *waitingClaims) keys() []string {
	keys := make([]string, 0, len(w.byKey))
	for k := range w.byKey {
		keys = append(keys, k)
	}
	return keys
}

// wake finds the oldest waiting claim that pv fits, preferring one no other
// PV has woken yet, and marks it woken by pv. fits decides with the claim's
// binding mode. A claim already woken by another PV is still better than
// none: the PV then waits for that claim's sync instead of being written
// Available just before a bind makes it Bound.
func (w *waitingClaims) wake(pv *v1.PersistentVolume, fits func(*v1.PersistentVolumeClaim) bool) (string, bool) {
	if key, ok := w.woke[pv.Name]; ok {
		return key, true
	}
	l := w.byClass[binding.VolumeClass(pv)]
	if l == nil {
		return "", false
	}
	fallback := ""
	for el := l.Front(); el != nil; el = el.Next() {
		wc := el.Value.(*waitingClaim)
		busy := len(w.wokenFor[wc.key]) > 0
		if (busy && fallback != "") || !fits(wc.claim) {
			continue
		}
		if busy {
			fallback = wc.key
			continue
		}
		w.mark(wc.key, pv.Name)
		return wc.key, true
	}
	if fallback != "" {
		w.mark(fallback, pv.Name)
		return fallback, true
	}
	return "", false
}

func (w *waitingClaims) mark(key, pvName string) {
	w.wokenFor[key] = append(w.wokenFor[key], pvName)
	w.woke[pvName] = key
}

// release ends the wake-ups of a claim whose sync ran and returns the PVs
// that woke it, so they can be offered to the next claim.
func (w *waitingClaims) release(key string) []string {
	pvs := w.wokenFor[key]
	delete(w.wokenFor, key)
	for _, pv := range pvs {
		delete(w.woke, pv)
	}
	return pvs
}

// forgetVolume drops a deleted PV's wake-up.
func (w *waitingClaims) forgetVolume(pvName string) {
	key, ok := w.woke[pvName]
	if !ok {
		return
	}
	delete(w.woke, pvName)
	w.wokenFor[key] = slices.DeleteFunc(w.wokenFor[key], func(n string) bool { return n == pvName })
	if len(w.wokenFor[key]) == 0 {
		delete(w.wokenFor, key)
	}
}
