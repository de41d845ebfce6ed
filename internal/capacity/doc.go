// Package capacity decides the CSIStorageCapacity objects of a driver, as
// the external-provisioner's capacity controller does (its pkg/capacity
// and pkg/capacity/topology), and whether a node can hold a claim by what
// the capacity loop knows.
//
// Nouns:
//   - Segment: one topology segment of the driver, the sorted key/value
//     pairs of its topology keys on a node (Segments finds them from the
//     CSINodes that list the driver and their Nodes' labels);
//   - Membership: the segment each node puts each driver on, kept one
//     node at a time (NodeSegment), so that a node's change costs the
//     segments it adds or removes; NodeChanged and CSINodeChanged say
//     whether an update can move a node's segment at all;
//   - Item: a segment and a StorageClass of the driver, for which one
//     object is wanted (Classes says which classes count);
//   - Answer: what GetCapacity said for an item;
//   - Identity: who publishes (driver, managed-by label, namespace, owner);
//   - Plan: the creates, updates and deletes that make the objects match
//     the items, each delete with a Reason;
//   - Room and Verdict: how much a segment can take now (the driver's
//     answer minus the bytes being provisioned there) and whether a claim
//     fits, with a Reason.
//
// Beyond the reference, what is published is the driver's answer minus the
// bytes of volumes being provisioned on the segment right now (Published):
// the scheduler then stops sending claims to a node that in-flight volumes
// are about to fill.
package capacity
