// Package attachment is the pure core of attaching volumes to nodes: the
// names Kubernetes gives to attachments (VolumeAttachment names, the unique
// volume names of node status, the external-attacher's finalizer) and the
// attach/detach controller's decisions, returned as values with a reason for
// every attachment it does not make or undo. It performs no I/O.
//
// Its nouns:
//
//   - Volume: a CSI volume as attach/detach sees it, the driver and the
//     volume handle of a PersistentVolume.
//   - Attachment: one VolumeAttachment, a volume on a node, named
//     csi-<sha256(handle+driver+node)> exactly as the reference names it.
//   - Unique volume name: kubernetes.io/csi/<driver>^<handle>, the form
//     node.status.volumesAttached and node.status.volumesInUse hold.
package attachment
