// Package resizing holds what the external-resizer's two controllers
// share: the resizer (expansion, internal/controller/resizer) and the
// modifier (VolumeAttributesClass, internal/controller/modifier) take the
// same dependencies and settings (the external-resizer's flags), remember
// the same things of their driver calls, and write claims and PVs the same
// way. It is not a loop: it runs nothing of its own, and the node agent may
// import it for the claim status write it shares with them.
//
// Nouns:
//
//   - Config: the dependencies and settings of either loop (Holds: which
//     PVs it serves; Recorders: an event recorder per driver, from
//     EventComponent, the external-resizer's event source; RecorderFrom
//     builds Config.Recorder over a broadcaster).
//   - Base: what either loop is built on (its Config, the claim and PV
//     listers, the queue, the Newest copies of its own writes, its Memory)
//     and the steps both take: reading a claim and its PV, the claim and PV
//     event handlers (a loop's own writes wake nothing), the resync, the
//     runner (its syncs return loop.Result: a slow retry is loop.After),
//     the secret read, the time of a mark, the writes (WriteClaim,
//     PatchVolume).
//   - Memory: what a loop knows of its earlier driver calls, per claim key,
//     lost on restart as the reference's: whether the last call ended
//     (an Outcome), whether it was refused as the volume is in use, and
//     since when the request has been infeasible (the slow retry).
//   - WriteClaim: the one write of a claim's status, a claimstatus.Patch
//     under a claimstatus.Precondition; the resizer, the modifier and the
//     node agent write claims through it.
package resizing
