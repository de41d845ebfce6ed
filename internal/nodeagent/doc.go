// Package nodeagent plays kubelet's volume-manager role for the simulated
// nodes of `volplane up`: for every pod bound to one of its nodes it waits
// for the pod's volumes to be attached where that is required, stages and
// publishes them through the CSI node services serving the node, into the
// kubelet's directory layout, reports node.status.volumesInUse, marks the
// pod Running and Ready, and, when the pod is deleted, unpublishes,
// unstages the last user, drops the volumes from volumesInUse and completes
// the pod's deletion. When a claim's volume grew and the claim waits for
// a node (NodeResizePending), it expands the volume with NodeExpandVolume,
// during the mount of a pod that starts, or online for a pod that runs,
// and finishes the claim's status as the kubelet does. What to do is
// decided by internal/mounting; this package reads, asks it, and acts.
//
// Nouns: Config (the agent's dependencies), Node (a node and the CSI
// endpoints serving it), Agent (one set of informers and two work queues
// for all its nodes: pods, keyed namespace/name, which stage and publish,
// and nodes, keyed by name, which tear down, write volumesInUse and finish
// deletions), nodeState (a node's dialed drivers and its lock), the disk
// (what vol_data.json files say is staged and published, read at every
// sync so that a restart carries on where the last run stopped).
//
// A node's pod syncs hold its lock shared and its node sync holds it
// exclusively: an unstage is decided and done while no pod of the node is
// being staged or published, so it never pulls a staging from under a pod
// that just started using it.
package nodeagent
