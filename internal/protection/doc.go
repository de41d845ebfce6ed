// Package protection is the pure core of the pvc-protection and
// pv-protection loops: given a claim (or volume) and the pods that may use
// it, it decides what to do with the protection finalizer and says why. It
// performs no I/O; internal/controller/protection reads, asks, and writes.
//
// Nouns: Decision (an Action and the Reason for it), ClaimFacts (what a claim
// decision rests on: the claim, the pods the informer cache indexes under
// it, and the namespace's pods from a live list once one was made), Use (how
// a pod uses a claim).
//
// The rules are kube-controller-manager v1.36's
// (pkg/controller/volume/pvcprotection and pvprotection): a claim being
// deleted keeps its finalizer while a scheduled pod references it by
// claimName, whatever the pod's phase, or through a generic ephemeral
// volume the pod controls, until the pod is shut down; unscheduled pods never
// keep it. The informer cache is asked first; a claim no cached pod uses
// needs a live list of its namespace's pods before the finalizer may go. A
// volume being deleted keeps its finalizer while it is Bound.
package protection
