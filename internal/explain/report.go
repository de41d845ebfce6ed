package explain

import "github.com/volplane/volplane/internal/binding"

// The JSON field names below are a contract for scripts: add fields, never
// rename or remove one.

// ClaimReport explains one PersistentVolumeClaim.
type ClaimReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	// Summary is one sentence: what the claim is waiting for, or that it
	// is at rest.
	Summary string `json:"summary"`
	// Next is the binder's next step for the claim (binding.ClaimAction:
	// None, Bind, SetDefaultClass, Provision, Pending, Lost).
	Next    string  `json:"next"`
	Request Request `json:"request"`
	Class   *Class  `json:"class,omitempty"`
	// Volumes are every volume considered for an unbound claim.
	Volumes *Considered `json:"volumes,omitempty"`
	// WaitingForPods are the unscheduled pods a WaitForFirstConsumer claim
	// waits for.
	WaitingForPods []string `json:"waitingForPods,omitempty"`
	// PlacedDirectly are the pods using an unbound WaitForFirstConsumer
	// claim that were put on a node directly (spec.nodeName): the
	// scheduler never selects a node for the claim.
	PlacedDirectly []PlacedPod   `json:"placedDirectly,omitempty"`
	SelectedNode   string        `json:"selectedNode,omitempty"`
	Provisioning   *Provisioning `json:"provisioning,omitempty"`
	Volume         *BoundVolume  `json:"volume,omitempty"`
	Nodes          []NodeUse     `json:"nodes,omitempty"`
	Expansion      *Change       `json:"expansion,omitempty"`
	Modification   *Change       `json:"modification,omitempty"`
	Deletion       *Deletion     `json:"deletion,omitempty"`
	// RestoresFrom is the claim's data source (a VolumeSnapshot, or a
	// claim to clone) as the provisioner checks it.
	RestoresFrom *Restore `json:"restoresFrom,omitempty"`
	// Capacity is what each node offers a pending WaitForFirstConsumer
	// claim, by the published CSIStorageCapacity objects of its class.
	Capacity []NodeCapacity `json:"capacity,omitempty"`
	// NoNodeHolds: by Capacity, no node can hold the claim, so the
	// scheduler places no pod using it (Summary says so, node by node).
	NoNodeHolds bool `json:"noNodeHolds,omitempty"`
	// Health is the volume health reported on the claim, if any.
	Health *Health `json:"health,omitempty"`
}

// Request is what the claim asks for.
type Request struct {
	Storage         string   `json:"storage"`
	AccessModes     []string `json:"accessModes"`
	VolumeMode      string   `json:"volumeMode"`
	VolumeName      string   `json:"volumeName,omitempty"`
	Selector        string   `json:"selector,omitempty"`
	AttributesClass string   `json:"attributesClass,omitempty"`
}

// Class is the claim's storage class as the binder sees it.
type Class struct {
	Name string `json:"name"`
	// Exists is false when the claim names a class that does not exist.
	Exists      bool   `json:"exists"`
	BindingMode string `json:"bindingMode,omitempty"`
	Provisioner string `json:"provisioner,omitempty"`
	// Serving is nil when the provisioner was not checked.
	Serving *Provisioner `json:"serving,omitempty"`
}

// Considered is every volume considered for a claim, counted by reason.
type Considered struct {
	Tally binding.Tally `json:"tally"`
	// Summary is the tally in one line ("0/12 volumes available: ...").
	Summary string `json:"summary"`
	// Chosen is the volume the binder would bind, "" when none fits.
	Chosen   string    `json:"chosen,omitempty"`
	Verdicts []Verdict `json:"verdicts"`
}

// Verdict is one volume (or, from a volume's side, one claim) not chosen.
type Verdict struct {
	Name   string         `json:"name"`
	Reason binding.Reason `json:"reason"`
	// Why is the reason as a short phrase ("too small").
	Why    string `json:"why"`
	Detail string `json:"detail,omitempty"`
}

// Provisioning is what the events say about dynamic provisioning.
type Provisioning struct {
	Provisioner string `json:"provisioner"`
	// Attempts is how many provisioning attempts the events record (the
	// provisioner records a repeated failure once, so this is a lower bound).
	Attempts  int    `json:"attempts"`
	Failures  int    `json:"failures"`
	LastError string `json:"lastError,omitempty"`
}

// BoundVolume is the volume bound to a claim (or named by it).
type BoundVolume struct {
	Name          string `json:"name"`
	Phase         string `json:"phase"`
	Capacity      string `json:"capacity"`
	ReclaimPolicy string `json:"reclaimPolicy"`
	Driver        string `json:"driver,omitempty"`
	Handle        string `json:"handle,omitempty"`
}

// NodeUse is a volume's state on one node: the pods using it there, its
// VolumeAttachment and whether the node reports it in use.
type NodeUse struct {
	Node       string   `json:"node"`
	NodeExists bool     `json:"nodeExists"`
	Pods       []PodUse `json:"pods,omitempty"`
	// AttachRequired is false for drivers that need no attach.
	AttachRequired bool   `json:"attachRequired"`
	Attachment     string `json:"attachment,omitempty"`
	Attached       bool   `json:"attached"`
	AttachError    string `json:"attachError,omitempty"`
	DetachError    string `json:"detachError,omitempty"`
	// InUse: the node lists the volume in status.volumesInUse (its agent
	// or kubelet wants it or still has it staged or published: it must not
	// be detached).
	InUse   bool   `json:"inUse"`
	Summary string `json:"summary"`
}

// PodUse is one pod using a volume on a node.
type PodUse struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	// Mounted: the pod runs, so the kubelet (or node agent) has published
	// the volume into it.
	Mounted bool `json:"mounted"`
	// MountError is the pod's last FailedMount or FailedAttachVolume event.
	MountError string `json:"mountError,omitempty"`
}

// Change is a pending expansion or modification.
type Change struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Status  string `json:"status,omitempty"`
	Summary string `json:"summary"`
}

// Deletion is what holds an object being deleted.
type Deletion struct {
	Since      string   `json:"since"`
	Finalizers []string `json:"finalizers"`
	// HeldBy are the objects that keep a finalizer in place (pods, a claim,
	// attachments).
	HeldBy  []string `json:"heldBy,omitempty"`
	Summary string   `json:"summary"`
}

// VolumeReport explains one PersistentVolume.
type VolumeReport struct {
	Name    string `json:"name"`
	Phase   string `json:"phase"`
	Summary string `json:"summary"`
	// Next is the binder's next step for the volume (binding.VolumeAction)
	// and, for a released volume, the reclaim branch (binding.Reclaim).
	Next          string   `json:"next"`
	Reclaim       string   `json:"reclaim,omitempty"`
	Capacity      string   `json:"capacity"`
	AccessModes   []string `json:"accessModes"`
	VolumeMode    string   `json:"volumeMode"`
	Class         string   `json:"class,omitempty"`
	ReclaimPolicy string   `json:"reclaimPolicy"`
	Driver        string   `json:"driver,omitempty"`
	Handle        string   `json:"handle,omitempty"`
	// ClaimRef is the claim the volume points at, "namespace/name".
	ClaimRef string `json:"claimRef,omitempty"`
	// ClaimState says what became of that claim: Bound, Binding, Missing,
	// Replaced (a new claim of the same name), Waiting (pre-bound).
	ClaimState string `json:"claimState,omitempty"`
	// Claims are, for a free volume, the unbound claims it was checked
	// against.
	Claims      *Considered  `json:"claims,omitempty"`
	Provisioner *Provisioner `json:"provisioner,omitempty"`
	Nodes       []NodeUse    `json:"nodes,omitempty"`
	Deletion    *Deletion    `json:"deletion,omitempty"`
}
