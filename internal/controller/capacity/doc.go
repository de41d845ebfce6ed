// Package capacity is the capacity loop (the external-provisioner's
// capacity controller, --enable-capacity): it publishes one
// CSIStorageCapacity object per topology segment and StorageClass of each
// driver served that has GET_CAPACITY, with what the driver's GetCapacity
// answers, less the bytes being provisioned on the segment right now
// (internal/controller/inflight, shared with the provisioner).
// internal/capacity decides; this package reads (CSINodes, Nodes,
// StorageClasses, the objects in its namespace, the drivers' answers),
// asks and applies.
//
// Nouns: Config, Controller (work keys: a driver, for all its segments,
// and "driver/segment" for one), members (each node's segment, kept from
// Node and CSINode events, so that a node's change syncs only the segments
// it adds or removes), dirty (the segments
// whose answers are stale: a volume was made or deleted there), the poll
// (every answer is stale after PollInterval, the reference's
// --capacity-poll-interval).
//
// The order of a sync: GetCapacity for every item without an
// answer or on a stale segment (each answer recorded in the ledger), then
// the plan's deletes, updates and creates. An object is written only when
// what it publishes or its owner changes.
//
// In node deployment the only segment is the node's own, the one its
// driver's NodeGetInfo reported (the reference's fixed node topology), and
// the objects are labelled managed-by volplane-<node>.
package capacity
