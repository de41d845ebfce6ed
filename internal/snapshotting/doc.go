// Package snapshotting decides, for one VolumeSnapshotContent of a served
// driver, what the csi-snapshotter sidecar's role (external-snapshotter
// v8.6.0, pkg/sidecar-controller) does next with the driver's snapshot:
// take it (CreateSnapshot, guarded by the being-created annotation), check
// a pre-provisioned one (ListSnapshots), delete it (DeleteSnapshot under
// the Delete policy) and release the content (drop its bound-protection
// finalizer), or wait. It also builds the CreateSnapshot request (name,
// source, parameters with the extra create metadata), names the secrets of
// each call, turns the driver's answer into the content's status, and says
// which contents a node deployment serves.
//
// Nouns: Plan (the Step to take and its Reason, a closed set), Decide,
// CreateRequest (BuildCreate), SecretRef (CreateSecret, DeleteSecret,
// ListSecret), Answer (the driver's snapshot) and StatusFrom / ErrorStatus,
// Serving (ServedBy, node deployment).
//
// It reads no API and calls no driver: the loop in
// internal/controller/snapshotter reads the content, its class and the
// driver's answers, asks, and writes.
package snapshotting
