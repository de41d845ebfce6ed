package provisioning

// Strings users and other tools depend on.
const (
	// ClaimFinalizer is on a claim while a backend volume may exist for it
	// without a PV.
	ClaimFinalizer = "provisioning.volplane.io/in-progress"
	// AnnEndpointNode names, next to ClaimFinalizer, the node ID of the
	// driver endpoint asked to create the claim's volume (a node-local
	// driver has one endpoint per node). Retries and the cleanup of a
	// deleted claim ask that endpoint again, even when the set of nodes,
	// and so the endpoint the claim's topology would choose now, changed:
	// otherwise a retry could make a second volume on another node and leak
	// the first.
	AnnEndpointNode = "provisioning.volplane.io/endpoint-node"
	// AnnCreateRequest records, next to ClaimFinalizer, the CreateVolume
	// request of the first attempt (JSON, without secrets and topology):
	// the cleanup of a claim deleted before its PV existed replays it to
	// find the volume, even once the claim's StorageClass or clone source
	// is gone.
	AnnCreateRequest = "provisioning.volplane.io/create-request"
	// VolumeFinalizer is on our PVs with reclaim policy Delete: the backend
	// volume must go before the PV does. The external-provisioner's name, so
	// either can take over from the other.
	VolumeFinalizer = "external-provisioner.volume.kubernetes.io/finalizer"
	// reservedPrefix marks class parameters meant for the provisioner, never
	// passed to the driver.
	reservedPrefix = "csi.storage.k8s.io/"
	paramFSType    = reservedPrefix + "fstype"
)

// Event reasons, as the reference's: the closed set the provisioner
// reports with.
const (
	EventProvisioning       = "Provisioning"
	EventSucceeded          = "ProvisioningSucceeded"
	EventFailed             = "ProvisioningFailed"
	EventCleanupFailed      = "ProvisioningCleanupFailed"
	EventVolumeFailedDelete = "VolumeFailedDelete"
	// EventRecordRejected: a record the provisioner keeps on a claim (the
	// recorded request, the endpoint pin) is not what it must be, so it is
	// not acted on (doc.go, "Records on claims").
	EventRecordRejected = "ProvisioningRecordRejected"
)

const (
	// VolumeNamePrefix, followed by the claim's UID, names the backend
	// volume and the PV made for a claim (VolumeName).
	VolumeNamePrefix          = "pvc-"
	persistentVolumeClaimKind = "PersistentVolumeClaim"
	volumeSnapshotKind        = "VolumeSnapshot"
)
