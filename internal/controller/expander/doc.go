// Package expander runs the expander loop, the role of
// kube-controller-manager's persistentvolume-expander (v1.36), which no
// longer expands anything itself: it hands a grown claim to the external
// resizer. What to do is decided by expansion.DecideHandOff; this package
// reads, asks, records events and writes.
//
// Nouns: Config (everything the loop needs), Controller (the loop), the
// claim queue (named volume_expand, as the reference's; keys
// namespace/name).
//
// When a claim is looked at, as the reference enqueues it: when a Bound
// claim is added to the informer (so once per start of the loop for every
// Bound claim), and when an update of a Bound claim raises its storage
// request or its status capacity. Other updates, informer re-deliveries
// and deletions are not looked at (the reference enqueues deletions only
// to find the claim gone). There is no periodic resync.
//
// How often the event fires, therefore, exactly as in the reference: once
// for each raise of the request of a Bound claim whose request then
// exceeds its capacity, once more for each such claim when the loop
// starts, and again on each retry of a failed sync (a migrated claim whose
// annotation could not be written). The event is Normal ExternalExpanding
// from source volume_expand: "waiting for an external controller to expand
// this PVC" for a CSI volume (and any volume no in-tree plugin expands),
// "CSI migration enabled for <plugin>; waiting for external resizer to
// expand the pvc" for an in-tree volume migrated to CSI. Identical events
// are counted by the event recorder, not repeated.
//
// Writes: none for a CSI volume. For a migrated in-tree volume, the
// annotation volume.kubernetes.io/storage-resizer=<CSI driver> by a
// strategic-merge patch of the claim's status subresource (which keeps
// metadata changes) carrying the resourceVersion read, as the reference's
// SetClaimResizer does (resizing.WriteClaim under claimstatus.IfUnchanged,
// the one claim status write of the resize family); a failure records Warning ExternalExpanding "error
// setting resizer annotation to pvc <ns/name>, with error <err>" and is
// retried. Unlike the reference, a claim that already carries the
// annotation is not patched again (the reference sends a patch that
// changes nothing).
//
// Reads: claims and PVs from the informer caches. The reference GETs the
// PV from the API server for every claim it dequeues, before it knows
// whether the claim needs anything; this loop asks the cache, and only for
// claims whose request exceeds their capacity. A claim whose PV is not in
// the cache yet, or whose PV's claimRef does not name it, is retried with
// backoff, as the reference retries it.
//
// Workers: 10, the reference's fixed count (Config.Workers changes it).
// Failed syncs back off per claim from 5ms to 1000s (the reference's
// controller rate limiter, without its overall 10/s bucket, as every loop
// of volplane).
package expander
