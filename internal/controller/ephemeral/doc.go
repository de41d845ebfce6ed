// Package ephemeral runs the ephemeral-volume loop, the role of
// kube-controller-manager's ephemeral-volume-controller
// (pkg/controller/volume/ephemeral, v1.37): it creates the claim of each
// generic ephemeral volume of a pod, "<pod>-<volume>", from the volume's
// template, controlled by the pod so that the garbage collector deletes it
// with the pod. What to do is decided by internal/ephemeral; this package
// reads, asks, records events and writes.
//
// Nouns: Config (what the loop needs), Controller (the loop), the pod queue
// (named ephemeral_volume, as the reference's; keys namespace/name),
// metrics (the reference's two counters).
//
// When a pod is looked at, as the reference enqueues it: when the informer
// adds a pod that has a generic ephemeral volume and is not being deleted
// (a pod's volumes never change, so updates are ignored; deletions are the
// garbage collector's business), and when a claim is deleted, for every
// pod naming it (informerindex.PodsUsing), so a claim deleted by mistake
// comes back. Beyond the reference, a resync every ResyncPeriod requeues
// pods one of whose claims is missing from the cache: a safety net.
//
// Per pod: its volumes in order (ephemeral.Decide). A missing claim is
// created (one Create, counted by ephemeral_volume_controller_create_total,
// a failure also by ephemeral_volume_controller_create_failures_total). A
// claim of the name the pod does not control is never adopted, patched or
// deleted: the pod gets Warning FailedBinding "ephemeral volume <volume>:
// PVC <ns>/<claim> was not created for pod <ns>/<pod> (pod is not owner)"
// from source ephemeral_volume, its later volumes wait, and the pod is
// retried with backoff until the claim goes (its deletion requeues the pod
// at once). A failed create records Warning FailedBinding "ephemeral
// volume <volume>: create PVC <claim>: <error>" and is retried, as in the
// reference.
//
// Writes: Create of claims only, in the pod's namespace; the loop never
// updates or deletes a claim. Reads: pods and claims from the informer
// caches.
package ephemeral
