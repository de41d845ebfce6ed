// Package snapshotapi holds the names of the snapshot API that more than one
// loop reads or writes: finalizers, annotations, labels, class parameters and
// how objects are named. They are external-snapshotter v8.6.0's and
// external-provisioner v6.3.0's (pkg/utils/util.go, controller.go), so that
// objects volplane writes look the same to any tool that knows them.
//
// It is a leaf: constants and name functions, no decision.
package snapshotapi

import "k8s.io/apimachinery/pkg/types"

// API groups and the kinds a claim's data source may name.
const (
	Group              = "snapshot.storage.k8s.io"
	GroupSnapshotGroup = "groupsnapshot.storage.k8s.io"
	KindSnapshot       = "VolumeSnapshot"
)

// Finalizers.
const (
	// ContentFinalizer is on a VolumeSnapshotContent bound to a snapshot
	// (the snapshot-controller adds it, the sidecar removes it once the
	// backend snapshot is deleted or kept under Retain).
	ContentFinalizer = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
	// BoundFinalizer is on a VolumeSnapshot bound to a content whose
	// deletion policy is Delete.
	BoundFinalizer = "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection"
	// AsSourceFinalizer is on every VolumeSnapshot not being deleted: it
	// holds the snapshot while a claim restores from it.
	AsSourceFinalizer = "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection"
	// InGroupFinalizer is on a VolumeSnapshot that is a member of a group.
	InGroupFinalizer = "snapshot.storage.kubernetes.io/volumesnapshot-in-group-protection"
	// ClaimFinalizer is on a claim while a snapshot of it is being made.
	ClaimFinalizer = "snapshot.storage.kubernetes.io/pvc-as-source-protection"
	// GroupContentFinalizer and GroupBoundFinalizer are the group
	// counterparts of ContentFinalizer and BoundFinalizer.
	GroupContentFinalizer = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshotcontent-bound-protection"
	GroupBoundFinalizer   = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-bound-protection"
	// ProvisionerSourceFinalizer is the provisioner's on a VolumeSnapshot
	// a claim is being restored from (external-provisioner v6.2+).
	ProvisionerSourceFinalizer = "provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection"
	// CloningFinalizer is the provisioner's on a claim being cloned.
	CloningFinalizer = "provisioner.storage.kubernetes.io/cloning-protection"
)

// Annotations and labels.
const (
	DefaultClassAnnotation      = "snapshot.storage.kubernetes.io/is-default-class"
	DefaultGroupClassAnnotation = "groupsnapshot.storage.kubernetes.io/is-default-class"
	// BeingDeleted is set on a content by the snapshot-controller once its
	// snapshot is being deleted: the sidecar may then delete the backend
	// snapshot.
	BeingDeleted      = "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted"
	GroupBeingDeleted = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-deleted"
	// BeingCreated is set on a content by the sidecar before it calls
	// CreateSnapshot and removed on success or a final error: while it is
	// there, the content is not deleted (so a timed-out create never leaks).
	BeingCreated      = "snapshot.storage.kubernetes.io/volumesnapshot-being-created"
	GroupBeingCreated = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-created"
	// DeletionSecretName and DeletionSecretNamespace carry the class's
	// snapshotter secret onto the content, for DeleteSnapshot.
	DeletionSecretName           = "snapshot.storage.kubernetes.io/deletion-secret-name"
	DeletionSecretNamespace      = "snapshot.storage.kubernetes.io/deletion-secret-namespace"
	GroupDeletionSecretName      = "groupsnapshot.storage.kubernetes.io/deletion-secret-name"
	GroupDeletionSecretNamespace = "groupsnapshot.storage.kubernetes.io/deletion-secret-namespace"
	// GroupHandleAnnotation is on a member content: the handle of its
	// group, so the sidecar never calls CreateSnapshot for it.
	GroupHandleAnnotation = "groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle"
	// AllowVolumeModeChange on a content lets a claim of another volume
	// mode restore from it.
	AllowVolumeModeChange = "snapshot.storage.kubernetes.io/allow-volume-mode-change"
	// ManagedByLabel names the node whose sidecar serves a content in
	// node deployment (distributed snapshotting).
	ManagedByLabel = "snapshot.storage.kubernetes.io/managed-by"
)

// Class parameters with the csi.storage.k8s.io/ prefix: never passed to the
// driver; the Key ones are added to CreateSnapshot's parameters as extra
// create metadata.
const (
	ParameterPrefix                  = "csi.storage.k8s.io/"
	SecretNameParameter              = ParameterPrefix + "snapshotter-secret-name"
	SecretNamespaceParameter         = ParameterPrefix + "snapshotter-secret-namespace"
	GroupSecretNameParameter         = ParameterPrefix + "group-snapshotter-secret-name"
	GroupSecretNamespaceParameter    = ParameterPrefix + "group-snapshotter-secret-namespace"
	ListSecretNameParameter          = ParameterPrefix + "snapshotter-list-secret-name"
	ListSecretNamespaceParameter     = ParameterPrefix + "snapshotter-list-secret-namespace"
	SnapshotNameKey                  = ParameterPrefix + "volumesnapshot/name"
	SnapshotNamespaceKey             = ParameterPrefix + "volumesnapshot/namespace"
	ContentNameKey                   = ParameterPrefix + "volumesnapshotcontent/name"
	GroupSnapshotNameKey             = ParameterPrefix + "volumegroupsnapshot/name"
	GroupSnapshotNamespaceKey        = ParameterPrefix + "volumegroupsnapshot/namespace"
	GroupSnapshotContentNameKey      = ParameterPrefix + "volumegroupsnapshotcontent/name"
	GroupGetSecretNameParameter      = ParameterPrefix + "group-snapshotter-get-secret-name"
	GroupGetSecretNamespaceParameter = ParameterPrefix + "group-snapshotter-get-secret-namespace"
)

// ContentName is the name of the content the snapshot-controller makes for
// a dynamic snapshot: snapcontent-<snapshot uid>.
func ContentName(snapshotUID types.UID) string { return "snapcontent-" + string(snapshotUID) }

// GroupContentName is the name of the content made for a dynamic group
// snapshot: groupsnapcontent-<group snapshot uid>.
func GroupContentName(groupUID types.UID) string { return "groupsnapcontent-" + string(groupUID) }

// BackendName is the name CreateSnapshot gets: snapshot-<snapshot uid> (the
// sidecar's --snapshot-name-prefix and a uuid length of -1). A group's
// backend name is groupsnapshot-<group uid>.
func BackendName(snapshotUID types.UID) string { return "snapshot-" + string(snapshotUID) }

// GroupBackendName is the name CreateVolumeGroupSnapshot gets.
func GroupBackendName(groupUID types.UID) string { return "groupsnapshot-" + string(groupUID) }
