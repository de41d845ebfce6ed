// Package protection is the pure core of the pvc-protection,
// pv-protection and vac-protection loops: given a claim (or volume, or
// VolumeAttributesClass) and what may use it, it decides what to do with the protection finalizer and says why. It
// performs no I/O; internal/controller/protection reads, asks, and writes.
//
// Nouns: Decision (an Action and the Reason for it), ClaimFacts (what a claim
// decision rests on: the claim, the pods the informer cache indexes under
// it, and the namespace's pods from a live list once one was made), Use (how
// a pod uses a claim), UnusedDecision (the claim condition Unused),
// ClassFacts (what a VolumeAttributesClass decision rests on).
//
// The rules are kube-controller-manager v1.37's
// (pkg/controller/volume/pvcprotection, pvprotection and vacprotection): a claim being
// deleted keeps its finalizer while a scheduled pod references it by
// claimName, whatever the pod's phase, or through a generic ephemeral
// volume the pod controls, until the pod is shut down; unscheduled pods never
// keep it. The informer cache is asked first; a claim no cached pod uses
// needs a live list of its namespace's pods before the finalizer may go. A
// volume being deleted keeps its finalizer while it is Bound. A
// VolumeAttributesClass being deleted keeps its finalizer while a PV or a
// claim names it (DecideClass; confirmed by a live list, beyond the
// reference). With the gate PersistentVolumeClaimUnusedSinceTime, a Bound
// claim not being deleted carries the condition Unused (DecideUnused): True
// while no pod that has not terminated references it, False while one
// does, scheduled or not. Finalizers are appended after an object's others.
package protection
