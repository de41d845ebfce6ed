// Package provisioner is the dynamic provisioning loop (the role of the CSI
// external-provisioner): it creates a backend volume and a pre-bound PV for
// each claim handed to a CSI driver it serves, and deletes both once a
// released PV's reclaim policy says Delete.
//
// Nouns: Config and Controller (the loop), request (the CreateVolumeRequest
// built purely from claim, class, nodes and driver), claimAction and
// volumeAction (what a sync decided), the in-progress claim finalizer (the
// persisted record that a backend volume may exist without its PV yet).
//
// No leaks, no duplicates: the backend volume is named pvc-<claim UID>, and
// every driver must make CreateVolume idempotent by name. Before the first
// CreateVolume the claim gets the finalizer ClaimFinalizer; it is removed
// only once the PV exists, or once the backend volume is deleted again
// because the claim went away first. A crash at any point therefore leaves
// either a finalizer the next run acts on, or a PV that owns the volume.
//
// The cleanup of a claim that went away before its PV existed replays the
// CreateVolume request of the attempt to the endpoint it went to: the
// driver returns the volume if it exists, and it is deleted. The request
// is the one this process remembers sending (createMemory), else the one
// recorded on the claim with the finalizer (AnnCreateRequest) at the
// endpoint pinned there (AnnEndpointNode), else one rebuilt from the class
// or the claim alone. Neither the class nor a clone source need exist any
// more. The finalizer stays while the volume may exist and cannot be found
// (AlreadyExists, or a pin whose endpoint is not served).
//
// Records on claims. The claim's user can write the finalizer, the pin and
// the recorded request too, so each is a cache of our own decision, checked
// before use, never a source of authority (docs/threat-model.md):
//   - the recorded request (whyNotOurs) must name pvc-<the claim's UID>,
//     clone only the volume of the claim's own data source (a claim of its
//     namespace and class whose PV is bound back to it), and carry the
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
//     is lost). A record that fails is reported
//     (ProvisioningRecordRejected) and treated as absent: the volume is
//     looked for as if nothing were recorded, with requests built from the
//     class or the claim, which all name pvc-<UID>. Dropping the finalizer
//     instead could leak a volume we did make (the owner can overwrite a
//     genuine record); keeping it forever would let a forged record stall
//     the claim. A claim whose class is gone and whose genuine record
//     carried parameters (after a restart: the memory knew it) is looked
//     for without them; a driver that then answers AlreadyExists keeps the
//     finalizer, with a Warning, until the class is created again (the
//     record then passes) or an operator deletes the volume.
//   - the pin (checkPin) must lie in the selected node's topology segment
//     and in the class's allowed topologies: every attempt asks only
//     there. Not in the node list, which a genuine pin outlives. On a
//     claim being provisioned a pin that fails is ignored, removed and
//     replaced by the endpoint chosen again (ProvisioningRecordRejected);
//     in a cleanup it is never asked, and the finalizer stays with a
//     Warning, since a volume may exist where it points and nowhere else.
//   - the finalizer only ever leads to a cleanup of pvc-<own UID> through
//     an endpoint that passed the pin check.
//
// A claim that goes away while a create for it is unsettled (in flight, or
// answered with a timeout), with nothing holding it (no pvc-protection,
// kubernetes/kubernetes#77988, or the finalizer removed by hand), is
// cleaned up from its delete event: the plan remembered in memory is
// replayed and the volume deleted (syncOrphan), retried until that
// succeeds or the driver answers that no volume exists.
//
// Our finalizer (VolumeFinalizer) is on a PV of ours exactly while its
// policy is Delete, as the external-provisioner keeps it: it goes under
// Retain or Recycle, and is put back on a Bound PV switched back to Delete
// (provisioned-by naming a driver we serve), so that deleting the PV later
// deletes the backend volume.
//
// A Released PV under Delete is reclaimed only after three checks: the
// live PV (not the informer's copy) still asks for it (whyNotDelete); no
// VolumeAttachment still names it, for drivers with an attach step; and
// the endpoint that can hold the volume is served (csi.Pool.ForDelete),
// never another node's, which would answer NotFound for an ID it never
// made; a node affinity on no key the driver reports cannot tell, and
// waits too. Each wait is a VolumeFailedDelete event on the PV and a retry.
//
// What the external-provisioner v6.3.0 refuses or leaves alone, so do we:
// a claim with a label selector fails ("claim Selector is not supported"),
// a claim whose data source is a populator's kind is left to the populator.
// Class secrets (csi.storage.k8s.io/*-secret-name and -namespace, with
// their templates) are resolved as it resolves them: the provisioner
// secret's data goes with CreateVolume and DeleteVolume, the other
// references are recorded on the PV (secrets.go, credentials.go).
//
// A claim naming a VolumeAttributesClass gets the class's parameters as the
// request's mutable parameters and its PV records the class, which the
// binder matches against the claim's; a driver without MODIFY_VOLUME or a
// class for another driver fails for good, a class that does not exist
// (yet) is retried and its creation wakes the claim (attributes.go).
//
// ResourceExhausted from CreateVolume is believed ("nothing was made here")
// only when the same request gets it twice: only then does the finalizer
// go, the pin move to the next node, or the selected node go back to the
// scheduler (csierror.OutOfRoom says why).
//
// In node deployment (NodeDeployment, node.go) the provisioner runs beside
// one node's driver and acts only on what internal/provisioning says is
// its node's: claims selected for the node or pinned to its driver, PVs
// whose node affinity points at it. An unassigned claim of an Immediate
// class is raced for: after provisioning.RaceDelay the node writes itself
// as the selected node with the claim's resourceVersion (claimRace), and
// the one write that does not conflict wins.
//
// Events on claims come from the component "<driver>_volplane" (one per
// driver served), as the external-provisioner reports "<driver>_<identity>".
package provisioner
