package capacity

import "fmt"

// Published is what is published for an answer while inFlight bytes are
// being provisioned on the segment: the available capacity less them, and
// the maximum volume size less them too (never above the capacity left
// when the driver's maximum was within its capacity). Both floor at 0.
// Without bytes in flight it is the driver's answer, as the reference
// publishes it.
func Published(a Answer, inFlight int64) (capacity int64, maximum *int64) {
	capacity = max(a.Available-inFlight, 0)
	if a.Maximum == nil {
		return capacity, nil
	}
	m := max(min(*a.Maximum, max(a.Available, *a.Maximum)-inFlight), 0)
	return capacity, &m
}

// Room is the most one new volume may take, as the scheduler reads an
// object (maximumVolumeSize, else capacity): what Published leaves.
func Room(a Answer, inFlight int64) int64 {
	c, m := Published(a, inFlight)
	if m != nil {
		return *m
	}
	return c
}

// Fit says whether a volume fits a segment.
type Fit string

const (
	// Fits: the segment has room for it.
	Fits Fit = "Fits"
	// Unknown: the loop has no answer for the segment and class (capacity
	// is not tracked, or not yet): the driver decides.
	Unknown Fit = "CapacityUnknown"
	// NoRoom: the driver's last answer, less the volumes being provisioned
	// there, leaves less than the volume needs.
	NoRoom Fit = "NotEnoughCapacity"
)

// Verdict is whether a volume of Bytes fits, and the numbers it was decided
// from.
type Verdict struct {
	Fit      Fit
	Bytes    int64
	Room     int64
	InFlight int64
}

// Check says whether bytes fit the segment of a known answer (known false:
// Unknown) with inFlight bytes being provisioned there.
func Check(a Answer, known bool, inFlight, bytes int64) Verdict {
	v := Verdict{Fit: Unknown, Bytes: bytes, InFlight: inFlight}
	if !known {
		return v
	}
	v.Room = Room(a, inFlight)
	if bytes > v.Room {
		v.Fit = NoRoom
	} else {
		v.Fit = Fits
	}
	return v
}

// String says the verdict in words, for events and logs.
func (v Verdict) String() string {
	switch v.Fit {
	case NoRoom:
		return fmt.Sprintf("%s: %d bytes requested, %d bytes of room (%d bytes being provisioned there)", v.Fit, v.Bytes, v.Room, v.InFlight)
	case Fits:
		return fmt.Sprintf("%s: %d bytes requested, %d bytes of room", v.Fit, v.Bytes, v.Room)
	}
	return string(v.Fit)
}
