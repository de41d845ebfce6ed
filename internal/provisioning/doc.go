// Package provisioning is the pure core of node-deployment mode: a
// provisioner that runs beside one node's driver (the external-provisioner's
// --node-deployment) and must decide, for every claim and PV it sees,
// whether it is this node's to handle. It performs no I/O:
// internal/controller/provisioner (and the resizer, for PVs) reads, asks,
// and acts.
//
// Its nouns:
//
//   - Local: this provisioner's node and what its driver reported there
//     (node ID, topology segment), with the node object's labels.
//   - ClaimFacts and ClaimVerdict: for a claim the provisioner would act
//     on, a Turn (Handle, Race or Leave) and, for Leave, a Reason from a
//     closed set. Handle: the claim is assigned to this node (selected
//     node, or an in-progress pin to this node's driver). Race: an
//     unassigned claim of an Immediate class that this node may serve;
//     the provisioner tries to become its owner (RaceDelay).
//   - VolumeVerdict: whether a PV's volume is held by this node's driver
//     (its node affinity against the node's labels and the driver's
//     segment), the only node that may delete or expand it.
//   - RaceDelay: how long a node waits before it claims an unassigned
//     Immediate claim: longer the more claims it won lately and the more
//     often this claim's attempt conflicted, never more than the maximum.
package provisioning
