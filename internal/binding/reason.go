package binding

// Reason says why a PV was not chosen for a claim. The set is closed: events,
// logs and `volplane explain` all render these values, so they cannot drift.
type Reason string

// The empty Reason means the PV fits the claim.
const (
	ReasonNone Reason = ""

	// Rejections: the PV can never serve the claim in its current state.
	ReasonInvalidSelector         Reason = "InvalidSelector"
	ReasonBeingDeleted            Reason = "BeingDeleted"
	ReasonBoundToOther            Reason = "BoundToOther"
	ReasonPreBoundToOther         Reason = "PreBoundToOther"
	ReasonClassMismatch           Reason = "ClassMismatch"
	ReasonVolumeModeMismatch      Reason = "VolumeModeMismatch"
	ReasonAttributesClassMismatch Reason = "AttributesClassMismatch"
	ReasonAccessModes             Reason = "AccessModes"
	ReasonTooSmall                Reason = "TooSmall"
	ReasonSelector                Reason = "Selector"
	ReasonNotAvailable            Reason = "NotAvailable"
	ReasonWaitForFirstConsumer    Reason = "WaitForFirstConsumer"

	// The PV fits, but another candidate won.
	ReasonMoreAccessModes  Reason = "MoreAccessModes"
	ReasonLargerThanChosen Reason = "LargerThanChosen"
	ReasonNotChosen        Reason = "NotChosen"
)

var reasonMessages = map[Reason]string{
	ReasonNone:                    "the volume fits the claim",
	ReasonInvalidSelector:         "the claim's label selector is invalid",
	ReasonBeingDeleted:            "the volume is being deleted",
	ReasonBoundToOther:            "the volume is bound to another claim",
	ReasonPreBoundToOther:         "the volume is reserved (pre-bound) for another claim",
	ReasonClassMismatch:           "the volume's storage class differs from the claim's",
	ReasonVolumeModeMismatch:      "the volume's volumeMode differs from the claim's",
	ReasonAttributesClassMismatch: "the volume's volumeAttributesClassName differs from the claim's",
	ReasonAccessModes:             "the volume does not offer every requested access mode",
	ReasonTooSmall:                "the volume is smaller than the request",
	ReasonSelector:                "the volume's labels do not match the claim's selector",
	ReasonNotAvailable:            "the volume is neither Available nor Pending",
	ReasonWaitForFirstConsumer:    "the class waits for the first consumer: the scheduler picks unbound volumes",
	ReasonMoreAccessModes:         "the volume fits, but one with fewer access modes was chosen",
	ReasonLargerThanChosen:        "the volume fits, but a smaller one was chosen",
	ReasonNotChosen:               "the volume fits, but another one was chosen",
}

// Reasons lists every Reason except ReasonNone, in a stable order.
func Reasons() []Reason {
	return []Reason{
		ReasonInvalidSelector, ReasonBeingDeleted, ReasonBoundToOther, ReasonPreBoundToOther,
		ReasonClassMismatch, ReasonVolumeModeMismatch, ReasonAttributesClassMismatch,
		ReasonAccessModes, ReasonTooSmall, ReasonSelector, ReasonNotAvailable,
		ReasonWaitForFirstConsumer, ReasonMoreAccessModes, ReasonLargerThanChosen, ReasonNotChosen,
	}
}

// Message is the human sentence for the reason.
func (r Reason) Message() string {
	if m, ok := reasonMessages[r]; ok {
		return m
	}
	return "unknown reason " + string(r)
}

// Fits reports whether the reason says the PV could serve the claim on its
// own (it may still have lost to a better candidate).
func (r Reason) Fits() bool {
	switch r {
	case ReasonNone, ReasonMoreAccessModes, ReasonLargerThanChosen, ReasonNotChosen:
		return true
	}
	return false
}

// Verdict is why one PV was not chosen for a claim. Detail carries the
// specifics (sizes, class names, the other claim) for people.
type Verdict struct {
	PV     string
	Reason Reason
	Detail string
}
