package provisioner

import "github.com/volplane/volplane/internal/provisioning"

// The names the provisioner writes on claims and PVs live with the rules
// that read them (internal/provisioning); these are the same constants for
// callers that know the loop (tests, tools).
const (
	ClaimFinalizer   = provisioning.ClaimFinalizer
	AnnEndpointNode  = provisioning.AnnEndpointNode
	AnnCreateRequest = provisioning.AnnCreateRequest
	VolumeFinalizer  = provisioning.VolumeFinalizer
)

// eventComponentSuffix follows the driver's name in the event source, as
// the external-provisioner's "<driver>_<identity>".
const eventComponentSuffix = "_volplane"

// EventComponent is the event source of the claim events for driver.
func EventComponent(driver string) string { return driver + eventComponentSuffix }
