package binding

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// A volume sync that decides phase Available has a volume a waiting claim
// may take. The controller offers it to the waiting claims (index.Waiting
// chooses which one wakes) and then writes the phase, unless the offer
// makes the write needless: DecidePhase says which, from what came of the
// offer.

// Offer is what came of offering a free volume to the waiting claims.
type Offer int

const (
	// NotOffered: the decision does not free the volume (Offers said no).
	NotOffered Offer = iota
	// OfferRefused: no waiting claim fits the volume.
	OfferRefused
	// OfferTaken: a waiting claim was woken for the volume, or a claim has
	// reserved it already.
	OfferTaken
)

func (o Offer) String() string {
	return [...]string{"NotOffered", "Refused", "Taken"}[o]
}

// Offers says whether the decision frees pv for the waiting claims: it is
// to be Available and it is not being deleted.
func Offers(pv *v1.PersistentVolume, d VolumeDecision) bool {
	return d.Phase == v1.VolumeAvailable && pv.DeletionTimestamp == nil
}

// PhaseAction is what becomes of the phase a volume decision names.
type PhaseAction int

const (
	// PhaseWrite: write Phase and Message (a no-op when the PV has them).
	PhaseWrite PhaseAction = iota
	// PhaseLeftToBind: a claim will bind this new PV, and its bind writes
	// phase Bound: writing Available first would be a wasted fifth write.
	PhaseLeftToBind
)

func (a PhaseAction) String() string {
	return [...]string{"Write", "LeftToBind"}[a]
}

// PhaseDecision is what to do with the phase of a volume decision, and why.
type PhaseDecision struct {
	Action PhaseAction
	Reason string
}

func (p PhaseDecision) String() string { return fmt.Sprintf("%s (%s)", p.Action, p.Reason) }

// DecidePhase decides whether the phase d names is written to pv, given
// what came of offering pv to the waiting claims.
func DecidePhase(pv *v1.PersistentVolume, d VolumeDecision, offered Offer) PhaseDecision {
	switch {
	case d.Phase != v1.VolumeAvailable:
		return PhaseDecision{Action: PhaseWrite, Reason: "the decision frees no volume"}
	case offered != OfferTaken:
		return PhaseDecision{Action: PhaseWrite, Reason: "no waiting claim takes the volume"}
	case pv.Status.Phase != v1.VolumePending:
		return PhaseDecision{Action: PhaseWrite, Reason: "the volume has had a phase written: it must say Available until the bind"}
	}
	return PhaseDecision{Action: PhaseLeftToBind, Reason: "a claim takes this new volume; its bind writes phase Bound"}
}
