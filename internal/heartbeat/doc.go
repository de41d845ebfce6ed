// Package heartbeat says whether a provisioner, or a snapshotter, is
// running: each volplane provisioner and snapshotter keeps a
// coordination.k8s.io Lease fresh for every CSI driver it serves, and
// Role.Find reads those Leases (and the leader election Lease of the
// upstream sidecar of the role) into a Presence that `volplane explain`
// and `volplane doctor` print.
//
// Nouns:
//   - the Role: Provisioner (the external-provisioner's) or Snapshotter
//     (the csi-snapshotter's). Each has its own Lease names
//     (Role.LeaseName: volplane-provisioner-..., volplane-snapshotter-...),
//     label and annotation (Role.Label, Role.Annotation:
//     heartbeat.volplane.io/<role>) and upstream leader election Lease
//     (Role.SidecarLeaseName); a Lease of one role never counts for the
//     other. What is said below of the provisioner holds for both; the
//     package-level LeaseName, Selector, SidecarLeaseName and Find are the
//     provisioner's, the names volplane always used.
//   - the heartbeat Lease: one per driver name in the central mode
//     (LeaseName(driver, "")), one per driver and node in node deployment,
//     where every node runs its own provisioner (LeaseName(driver, node)).
//     It lives in the namespace of the provisioner's leader election
//     (kube-system by default) and carries the label LabelProvisioner
//     (LabelValue(driver): the driver name itself when it is a valid label
//     value) and the exact names in AnnotationProvisioner and
//     AnnotationNode, so that a reader finds every heartbeat of a driver
//     with Selector(driver) across namespaces. holderIdentity is the
//     process (its host name: the pod's name in a cluster), renewTime the
//     last beat, leaseDurationSeconds how long it counts without one.
//   - the sidecar Lease: external-provisioner elects its leader on a Lease
//     named after the driver (SidecarLeaseName) in its own namespace, the
//     csi-snapshotter on "external-snapshotter-leader-<driver>"; a fresh
//     one in any namespace counts as serving. An external-provisioner
//     run without leader election (a single replica, or its own node
//     deployment) leaves no Lease, so Find cannot see it.
//   - Presence: what Find decided, with a sentence for people.
//   - the writer (internal/controller/heartbeats.Run, not here: this package
//     decides and performs no I/O) renews the Leases every Config.Period and
//     deletes them when it stops (only while it still holds them: another
//     replica may have taken over), so that a provisioner shut down
//     cleanly is at once reported as gone and leaves nothing behind; one
//     that crashed leaves a Lease that expires after Config.Duration.
//
// Find is pure: the caller lists the Leases (internal/inspect does it)
// and passes its clock.
package heartbeat
