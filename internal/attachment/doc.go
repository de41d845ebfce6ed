// Package attachment is the pure core of attaching volumes to nodes: the
// names Kubernetes gives to attachments (VolumeAttachment names, the unique
// volume names of node status, the external-attacher's finalizer) and the
// attach/detach controller's decisions, returned as values with a reason for
// every attachment it does not make or undo. It performs no I/O.
//
// Its nouns:
//
//   - Volume: an attachable volume as attach/detach sees it, of a
//     PersistentVolume or of a pod's inline volume, of one Kind: a CSI PV
//     (its driver and handle); a Migrated in-tree source (awsElasticBlockStore,
//     gcePersistentDisk, azureDisk, azureFile, cinder, vsphereVolume,
//     portworxVolume), attached as the CSI volume csi-translation-lib makes
//     of it, as kube-controller-manager v1.37 always does; or an InTree
//     source whose controller-side attach does nothing (iscsi, fc), which
//     is reported attached at once and never gets a VolumeAttachment.
//   - Attachment: one VolumeAttachment, a volume on a node, named
//     csi-<sha256(handle+driver+node)> exactly as the reference names it.
//   - Unique volume name: kubernetes.io/csi/<driver>^<handle> (a migrated
//     volume's with the translated driver and handle), or
//     kubernetes.io/iscsi/<portal>:<iqn>:<lun>, kubernetes.io/fc/<wwns>:<lun>
//     or kubernetes.io/fc/<wwids> (the plugins' GetVolumeName), the form
//     node.status.volumesAttached and node.status.volumesInUse hold.
//   - Facts: everything one node's decision rests on (the Node as seen,
//     its pods, their claims, volumes and drivers, the attachments, when
//     each unwanted attachment became unwanted, and now), or, with a
//     Scope, its decision about some of its volumes: the plan is then the
//     whole node's about those, and keeps the node's record of the others.
//   - Desired: a volume the node's pods want, with those pods, keyed
//     by its unique volume name as the reference's desired state is: two
//     PersistentVolumes naming one driver and handle are one volume.
//   - Plan: what Decide returns for one node: attachments to create (each
//     an Attach saying which volume and whether it is single-node), to
//     Detach (with a DetachReason) and that Wait (with a WaitReason), the
//     node's volumesAttached to be, and the Events for the pods, with the
//     reference's texts.
//
// The rules are kube-controller-manager's reconciler's: detach before
// attach; an unwanted volume the node reports in use waits, unless the node
// has the out-of-service taint, or it is not Ready and the unmount wait
// (6 minutes) has run out; a volume whose access modes allow one node only
// is not attached to a second node while an attachment of it exists,
// through whichever PersistentVolume (an in-tree volume, while another
// node's volumesAttached lists it). An in-tree volume is detached by
// leaving volumesAttached, under the same rules (a Detach without an
// Attachment). Decide sees one moment; other nodes
// decide at the same time, so the creator of a SingleNode attachment must
// check again when it creates it (internal/controller/attachdetach does).
package attachment
