// Package loop holds what every control loop of volplane shares: keyed work
// queues drained by workers once the informer caches are synced (Runner),
// and the newest copy of each object a loop has seen or written (Newest).
//
// Nouns: Runner (the workers and the safety-net resync of one loop), Queue
// (a work queue and the sync that handles its keys), Newest (per key, the
// newer of the informer's copy and our last write's), As (an informer's
// object, read through a delete tombstone), Settings (workers, resync and
// retry bounds a loop's Config embeds, with their defaults), Waits (per
// key, the backoff of looks in a row at something not done yet).
package loop
