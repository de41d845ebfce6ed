// Package ephemeral is the pure core of the ephemeral-volume loop, the role
// of kube-controller-manager's ephemeral-volume-controller
// (pkg/controller/volume/ephemeral, syncHandler and handleVolume, v1.37):
// for each generic ephemeral volume of a pod it decides whether the claim
// "<pod>-<volume>" must be created from the volume's template, already is
// the pod's, or is somebody else's claim that the pod must not use. It
// performs no I/O; internal/controller/ephemeral reads, asks, and writes.
//
// Nouns: Decision (one volume's Action and the Reason for it), NewClaim
// (the claim the loop creates).
//
// The rules: a pod being deleted gets nothing. Volumes are taken in the
// pod's order; a claim of the volume's name that the pod controls (owner
// reference with controller=true and the pod's UID, in the pod's
// namespace) is the pod's and left alone; a missing claim is created,
// controlled by the pod with blockOwnerDeletion, carrying the template's
// labels, annotations and spec and nothing else of it; a claim of that
// name the pod does not control is a Conflict: never adopted, changed or
// deleted, the pod's later volumes wait, and the pod gets the reference's
// FailedBinding warning until the claim goes.
package ephemeral
