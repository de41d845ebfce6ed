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
// and finishes the claim's status as the kubelet does.
//
// The agent is a loop like those of internal/controller: every decision is
// internal/mounting's (facts in, plan out, with reasons); this package
// reads the facts (the informers' objects through informerindex, the
// node's disk), asks mounting, and carries out the plan with CSI calls,
// disk records and API writes, in this order:
//
//   - An event about a pod goes where mounting.PodWork sends it: the pod
//     queue to mount, its node's queue to tear down, or nowhere. A change
//     of a claim's status capacity (mounting.CapacityChanged) or of a
//     PV's capacity (mounting.VolumeCapacityChanged) queues every live
//     pod using it, running or not: a ReadWriteMany volume another node
//     finished growing has no resize status left to say so, and the two
//     informers deliver the claim and the PV in either order, so the
//     second one seen must wake the pod (the kubelet's periodic look at
//     mounted volumes' sizes; the resync here only visits pods not
//     running yet). The first sight of a live pod (every pod when the
//     agent starts) syncs it, running or not, as the kubelet reconstructs
//     its volumes: what changed while the agent was stopped is seen then.
//   - syncPod (node lock shared): read the pod's World (podWorld: the node,
//     the pod's claims and volumes, and only the records its plan reads,
//     mounting.RecordsOf, so a sync costs the same whatever the number of
//     pods on the node), mounting.DecidePod; queue the node if one of the
//     pod's volumes must be reported in use first; then for the pod's
//     PodPlan: the pod-level
//     FailedMount event, then per volume its Step.Ops in order (stage:
//     record, NodeStageVolume, record done; publish: read secrets, request
//     the service account tokens the CSIDriver asks for, record,
//     NodePublishVolume, record done; a stage or publish the driver ends
//     with a final answer removes its record, as the kubelet removes its
//     directory, so nothing is torn down for it, while any other error
//     leaves the record not done, an uncertain mount the teardown undoes;
//     a wait that nothing the agent watches ends, a ReadWriteOncePod volume
//     another pod has, returns an error and retries with backoff; expand:
//     Expansion.Ops in order: the
//     read-only warning, claim marked NodeResizeInProgress,
//     NodeExpandVolume, claim finished, staging record sized), each failure
//     with the kubelet's event; last, once every step succeeded and
//     PodPlan.MarkRunning, the pod's Running status.
//   - syncNode (node lock exclusive): read the node's whole World, Decide,
//     drop the attach-limit waits of pods gone, complete the deletion
//     of Plan.Finish (pods whose volumes are unpublished, as the kubelet:
//     before their unstage), unpublish then unstage then remove empty pod
//     directories, again while a round tore something down
//     (mounting.MaxTeardownRounds); then patch node.status.volumesInUse if
//     Plan.Node says so (a detach waits for it, not the pod's deletion).
//
// After a publish, the pod's fsGroup is applied to the volume where the
// kubelet applies it (mounting.OwnershipFor). Every
// Config.VolumeStatsAggPeriod (the kubelet's volumeStatsAggPeriod, 1m by
// default) one pass builds each node's world once and, with
// Config.Metrics, asks NodeGetVolumeStats of every claim published on the
// node and caches the answers (each scrape reports the cache as the
// kubelet's kubelet_volume_stats_*, with a node label: one agent serves
// several nodes), then probes the node's volume and storage health
// (health.go).
//
// At start, Run dials each node's drivers and registers them in the node's
// CSINode as the kubelet's plugin registration does (csinode.go), 16 nodes
// at a time; a missing CSINode is created with the drivers in it, one
// write.
//
// The kubelet's attach limit (limits.go): a third queue, keyed
// "node/driver", asks a node service NodeGetInfo again and writes its
// CSINode entry if that changed it (the allocatable count), every period
// of the driver's CSIDriver nodeAllocatableUpdatePeriodSeconds and at once
// when an attachment of the node failed with ResourceExhausted (once per
// failure); mounting.DecideRefresh says when. A pod still waiting, when
// Config.PodAttachAndMountTimeout ends, for an attachment that failed with
// ResourceExhausted is rejected as the kubelet rejects it (Failed,
// VolumeAttachmentLimitExceeded). With Config.UnmountOnStop (`up`), Run
// ends by unpublishing and unstaging everything its nodes' disks record
// (mounting.StopPlan), with no API write; the next start mounts again
// what the running pods need.
//
// Syncs return loop.Result: Done, or an error retried with backoff; waits
// end with the event that lets them go on (a claim bound, an attachment,
// the node's status), never with a timer.
//
// Nouns: Config (the agent's dependencies; Informers shares the process's
// factory, which its owner starts), Node (a node and the CSI endpoints
// serving it), Agent (two work queues for all its nodes: pods, keyed
// namespace/name, and nodes, keyed by name), nodeState (a node's dialed
// drivers and its lock), the disk (what vol_data.json files say is staged
// and published, read at every sync so that a restart carries on where
// the last run stopped).
//
// A node's pod syncs hold its lock shared and its node sync holds it
// exclusively: an unstage is decided and done while no pod of the node is
// being staged or published, so it never pulls a staging from under a pod
// that just started using it.
package nodeagent
