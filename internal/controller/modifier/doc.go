// Package modifier is the loop that applies VolumeAttributesClass changes
// to volumes: the external-resizer's modify controller, for the CSI
// drivers of a csi.Pool. For each Bound claim whose PV is a volume of a
// driver served, it reads the claim, its PV and the classes it names, asks
// modification.Decide what to do, and does it: mark the claim (status
// subresource patches), call ControllerModifyVolume with the class's
// parameters on the endpoint that holds the volume, write the PV's class
// and then the claim's current class, and record the events (source
// "external-resizer <driver>").
//
// It is built on resizing.Base, as the resizer is: the same Config, claim
// and PV handlers, writes (resizing.WriteClaim) and Memory. A class not
// reached yet, or a driver that cannot modify, is looked at again after a
// wait the sync returns (loop.After); failures back off.
//
// What it remembers between syncs (lost on restart, as the reference's):
// which claims' last call ended for sure (a claim InProgress with no such
// record is resumed with its status target, as the reference treats every
// InProgress claim it finds at start), and since when a target was found
// infeasible (the slow retry).
//
// Differences from the reference, on purpose: the creation of a class wakes
// the claims waiting for it (the reference re-reads a Pending claim only
// when its spec changes), and a driver without MODIFY_VOLUME is reported on
// the claim (see package modification).
package modifier
