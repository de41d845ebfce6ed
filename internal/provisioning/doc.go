// Package provisioning is the pure core of dynamic provisioning (the role
// of the CSI external-provisioner): every rule that decides what the
// provisioner does with a claim or a PV, and why not. It performs no I/O
// and reads no clock: internal/controller/provisioner reads the facts
// (listers, Secrets, what the drivers reported), asks, and writes.
//
// Its nouns:
//
//   - ClaimFacts, ClaimAction and DecideClaim: what a claim sync read and
//     what it decided (provision, finish, clean up, leave to a populator,
//     race); VolumeAction and DecideVolume likewise for a PV of ours.
//   - FailureOutcome (BeforeCreate, AfterCreate, AfterFailure): what a
//     failed attempt changes on the claim. Final marks an error retrying
//     the same request cannot fix.
//   - RequestFacts and BuildRequest: the CreateVolumeRequest, built from
//     the claim, its class, the driver (Driver) and the nodes; its
//     topology (where the volume may live) and the Endpoint pin.
//   - BuildVolume and ProvisionedVolume: the pre-bound PV of a new volume,
//     in the in-tree form for a migrated class (CSIClass, AsCSI,
//     VolumeDriver); SecretRefs, the class's secret references, resolved
//     from their templates and recorded on the PV.
//   - Data sources (ClaimSource, SourceRefusal): a claim of the claim's
//     namespace to clone, or a VolumeSnapshot there to restore
//     (RestoreSource, the external-provisioner's getSnapshotSource checks
//     and messages, over a SnapshotRead the loop made live; SnapshotHandle,
//     the snapshot derived through the content that points back;
//     SnapshotHolder, the endpoint that holds a node-local snapshot); the
//     source finalizers held while a volume is made from a source
//     (SourceFinalizer, SourceHeld).
//   - The records on claims (RecordFacts, WhyNotOurs, CheckPin) and the
//     checks before a volume is deleted (WhyNotDelete, AttachmentBlocks).
//   - Node deployment: Local, ClaimVerdict (Turn and Reason), VolumeVerdict
//     and RaceDelay.
//   - The names written on objects (ClaimFinalizer, AnnEndpointNode,
//     AnnCreateRequest, VolumeFinalizer) and the event reasons (Event*).
//
// No leaks, no duplicates: the backend volume is named pvc-<claim UID>
// (VolumeName), and every driver must make CreateVolume idempotent by
// name. The in-progress marks (ClaimFinalizer, the pin, the recorded
// request) say a backend volume may exist without its PV.
//
// Records on claims. The claim's user can write the finalizer, the pin and
// the recorded request too, so each is a cache of the provisioner's own
// decision, checked before use, never a source of authority
// (docs/threat-model.md):
//   - the recorded request (WhyNotOurs) must name pvc-<the claim's UID>,
//     clone only the volume of the claim's own data source (a claim of its
//     namespace and class whose PV is bound back to it), restore only the
//     snapshot its data source gives now (re-derived from the
//     VolumeSnapshot and the content pointing back to it, never read from
//     the record: a snapshot that cannot be derived any more refuses the
//     record), and carry the
//     parameters of the claim's class and attributes class. Where the
//     class is gone, parameters cannot be checked, and a driver may read a
//     parameter as where a volume lives (a share, a directory): replaying a
//     create and deleting what it returns could then delete what is there.
//     So a record with parameters is not replayed once its class is gone,
//     and a content source is replayed only if it is the volume of the
//     claim's own data source: its PV bound back to it, or, once the source
//     claim is gone, a PV of the driver whose claimRef still names that
//     claim (a PV is not the user's to write; with it gone too, the source
//     is refused and the clone is looked for without it, which a driver
//     answers AlreadyExists: the finalizer stays with a Warning, nothing
//     is lost). A record that fails is reported (EventRecordRejected) and
//     treated as absent: the volume is looked for as if nothing were
//     recorded, with requests built from the class or the claim, which all
//     name pvc-<UID>. Dropping the finalizer instead could leak a volume
//     the provisioner did make (the owner can overwrite a genuine record);
//     keeping it forever would let a forged record stall the claim. A claim
//     whose class is gone and whose genuine record carried parameters
//     (after a restart: the loop's memory knew it) is looked for without
//     them; a driver that then answers AlreadyExists keeps the finalizer,
//     with a Warning, until the class is created again (the record then
//     passes) or an operator deletes the volume.
//   - the pin (CheckPin) must lie in the selected node's topology segment
//     and in the class's allowed topologies (PinSegments): every attempt
//     asks only there. Not in the node list, which a genuine pin outlives.
//     On a claim being provisioned a pin that fails (PinMisfit) is ignored,
//     removed and replaced by the endpoint chosen again
//     (EventRecordRejected); in a cleanup it is never asked, and the
//     finalizer stays with a Warning, since a volume may exist where it
//     points and nowhere else.
//   - the finalizer only ever leads to a cleanup of pvc-<own UID> through
//     an endpoint that passed the pin check.
//
// The cleanup of a claim that went away before its PV existed replays the
// CreateVolume request of the attempt to the endpoint it went to
// (CleanupEndpoint): the request the loop remembers sending, else the one
// recorded on the claim, else one rebuilt from the class, or from the claim
// alone (ClaimOnlyRequest). Neither the class nor a clone source need exist
// any more.
//
// Our finalizer (VolumeFinalizer) is on a PV of ours exactly while its
// policy is Delete, as the external-provisioner keeps it (DecideVolume): it
// goes under Retain or Recycle, and is put back on a Bound PV switched back
// to Delete (provisioned-by naming a driver served, OwnProvisioner), so
// that deleting the PV later deletes the backend volume.
//
// A Released PV under Delete is reclaimed only if the live PV (not the
// informer's copy) still asks for it (WhyNotDelete) and, for drivers with
// an attach step, no VolumeAttachment still names it (AttachmentBlocks).
//
// What the external-provisioner v6.3.0 refuses or leaves alone, so do we:
// a claim with a label selector fails ("claim Selector is not supported",
// Refusal), a claim whose data source is a populator's kind is left to the
// populator (PopulatorKind). Class secrets (csi.storage.k8s.io/*-secret-name
// and -namespace, with their templates) are resolved as it resolves them
// (SecretRef): the provisioner secret's data goes with CreateVolume and
// DeleteVolume, the other references are recorded on the PV
// (RecordSecrets, RecordedDeletionSecret).
//
// A claim naming a VolumeAttributesClass gets the class's parameters as the
// request's mutable parameters (ClassParameters) and its PV records the
// class (WithAttributesClass), which the binder matches against the
// claim's; a driver without MODIFY_VOLUME (ErrNoModify) or a class for
// another driver fails for good, a class that does not exist (yet) is
// retried.
//
// ResourceExhausted from CreateVolume is believed ("nothing was made here")
// only when the same request gets it twice: only then does the finalizer
// go, the pin move to the next node, or the selected node go back to the
// scheduler (AfterCreate; csierror.OutOfRoom says why).
//
// Node deployment: a provisioner that runs beside one node's driver (the
// external-provisioner's --node-deployment) must decide, for every claim
// and PV it sees, whether it is this node's to handle.
//
//   - Local: this provisioner's node and what its driver reported there
//     (node ID, topology segment), with the node object's labels.
//   - ClaimVerdict (ForClaim): for a claim the provisioner would act on, a
//     Turn (Handle, Race or Leave) and, for Leave, a Reason from a closed
//     set. Handle: the claim is assigned to this node (selected node, or an
//     in-progress pin to this node's driver). Race: an unassigned claim of
//     an Immediate class that this node may serve; the provisioner tries to
//     become its owner (Gated turns the decision into ClaimRace).
//   - VolumeVerdict (ForVolume): whether a PV's volume is held by this
//     node's driver (its node affinity against the node's labels and the
//     driver's segment), the only node that may delete or expand it.
//   - RaceDelay: how long a node waits before it claims an unassigned
//     Immediate claim: longer the more claims it won lately and the more
//     often this claim's attempt conflicted, never more than the maximum.
package provisioning
