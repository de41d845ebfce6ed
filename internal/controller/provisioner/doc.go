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
// CreateVolume request recorded on the claim with the finalizer
// (AnnCreateRequest) to the endpoint pinned there (AnnEndpointNode): the
// driver returns the volume if it exists, and it is deleted. Neither the
// class nor a clone source need exist any more. The finalizer stays while
// the volume may exist and cannot be found (AlreadyExists, or a pin whose
// endpoint is not served).
//
// A Released PV under Delete is reclaimed only after three checks: the
// live PV (not the informer's copy) still asks for it (whyNotDelete); no
// VolumeAttachment still names it, for drivers with an attach step; and
// the endpoint that can hold the volume is served (csi.Pool.ForDelete),
// never another node's, which would answer NotFound for an ID it never
// made. Each wait is a VolumeFailedDelete event on the PV and a retry.
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
// scheduler (csi.IsOutOfRoom says why).
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
