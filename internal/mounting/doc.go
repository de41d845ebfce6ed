// Package mounting is the pure core of kubelet's volume-manager role on one
// node: from the pods bound to the node, their claims and volumes, the CSI
// drivers, the node's status and the node's attachments, and what is found
// staged and published on disk, it decides what to stage, publish,
// unpublish and unstage, what to wait for and why, which pods may run, and
// what the node reports in status.volumesInUse. It performs no I/O;
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
//   - Layout: the kubelet's directory layout under a node root.
//
// The rules are kubelet v1.36's (pkg/kubelet/volumemanager, pkg/volume/csi):
// a claim that is missing, not bound or being deleted fails the pod's volume
// processing with the reference's texts; an attachable volume (CSIDriver
// attachRequired, or no CSIDriver at all) is first reported in use, then
// waited for in node.status.volumesAttached and its VolumeAttachment; a
// volume is staged once per node before any pod publishes it; teardown
// unpublishes first and unstages a volume once no pod on the node uses it.
package mounting
