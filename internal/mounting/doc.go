// Package mounting is the pure core of kubelet's volume-manager role on one
// node: from the pods bound to the node, their claims and volumes, the CSI
// drivers, the node's status and the node's attachments, and what is found
// staged and published on disk, it decides what to stage, publish,
// unpublish and unstage, what to wait for and why, which pods may run, and
// what the node reports in status.volumesInUse, and in which order the
// agent acts. It performs no I/O and reads no clock;
// internal/nodeagent reads, asks, and acts.
//
// Its nouns:
//
//   - World: everything one decision rests on, for one node.
//   - Driver: what the node knows of a CSI driver: whether its node service
//     is served here, whether it stages, whether volumes need attaching.
//   - Staged and Published: a volume's staging (once per volume per node)
//     and a pod's publication of it, as found on disk from their
//     vol_data.json files, so that teardown works after a restart even when
//     the PersistentVolume is gone.
//   - Plan: the decision; per pod a PodPlan with one Step per CSI volume
//     (an Action, and a Reason for every wait), plus the node's teardown
//     and its volumesInUse.
//   - Expansion: a node expansion a published volume needs once its PV
//     grew (the kubelet's NodeExpander), and its ExpandMode: what it calls
//     and writes. It happens at mount, after publishing and before the pod
//     runs, or online (ExpandOnNode) for a running pod.
//   - Layout: the kubelet's directory layout under a node root, and the
//     CSI node requests and vol_data.json records built over it.
//   - Work: where an event about a pod goes (PodWork): mount it, tear its
//     node down, or nothing.
//   - Op and ExpandOp: the operations of a step and of an expansion, in the
//     order the agent carries them out; ExpandFailure: what a failed
//     NodeExpandVolume leads to.
//   - NodeAction: what a node sync writes after its teardown (report
//     volumesInUse first, then finish the deletions).
//   - RunningStatus: the pod's status once its containers started.
//   - Refresh and AllocatableState: when a driver's CSINode allocatable
//     count is asked again (DecideRefresh); AttachLimitRejection and
//     RejectedStatus: the kubelet's VolumeAttachmentLimitExceeded.
//   - StopPlan: what a clean stop of `up` unmounts.
//
// The rules are kubelet v1.36's (pkg/kubelet/volumemanager, pkg/volume/csi,
// pkg/volume/util/operationexecutor): a claim that is missing, not bound or
// being deleted fails the pod's volume processing with the reference's
// texts; an attachable volume (CSIDriver attachRequired, or no CSIDriver at
// all) is first reported in use, then waited for in
// node.status.volumesAttached; then the mount's own checks (the PV's node
// affinity against the node's labels, a ReadWriteOncePod volume another pod
// of the node has), its VolumeAttachment (present, not being deleted,
// attached: WaitForAttach) and its driver; a volume is staged once per node
// before any pod publishes it, and publishing checks the CSIDriver's
// lifecycle modes; teardown unpublishes first and unstages a volume once no
// pod on the node uses it. The node requests are the kubelet's: access
// modes mapped by the node service's SINGLE_NODE_MULTI_WRITER, the pod's
// fsGroup to a driver with VOLUME_MOUNT_GROUP, the pod's identity for a
// CSIDriver with podInfoOnMount, the service account tokens it asks for
// (Tokens), read-only by the pod's claim source alone, and a block volume at
// the block mapper's paths (Layout) with its MapVolume texts. A node
// expansion grows the volume to the claim's allocated size. A CSI volume in
// the pod's own spec (an inline ephemeral volume, inline.go) is published
// alone, as kubelet v1.37 publishes it: only for a CSIDriver listing the
// Ephemeral lifecycle mode, under the kubelet's handle (InlineHandle),
// never staged, attached, expanded or reported in use.
package mounting
