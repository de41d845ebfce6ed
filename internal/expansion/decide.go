package expansion

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/quantity"
)

// Facts are what a sync of one claim read.
type Facts struct {
	// Claim is the claim; Volume the PV its spec.volumeName names, nil if
	// that PV is not (yet) in the cache.
	Claim  *v1.PersistentVolumeClaim
	Volume *v1.PersistentVolume
	// Served: the PV's spec.csi.driver is one this resizer serves.
	Served bool
	// ControllerExpand: the driver's controller has EXPAND_VOLUME;
	// NodeExpand: its node service has. With neither it cannot expand.
	ControllerExpand, NodeExpand bool
	// FinalErrorSeen: this resizer's last ControllerExpandVolume for the
	// claim ended with a final error (kept in memory, as the reference
	// does; lost on restart, which only makes the next sync more careful).
	FinalErrorSeen bool
	// InfeasibleBackoff: the claim was found ControllerResizeInfeasible
	// and its slow retry is not due yet.
	InfeasibleBackoff bool
	// OfflineInUse: the driver expands only offline, it refused an earlier
	// expansion of this claim as in use, and a pod still uses the claim.
	OfflineInUse bool
}

// Action is what to do.
type Action int

const (
	// None: nothing to expand now.
	None Action = iota
	// Expand: mark the claim in progress, then ask the driver for Size.
	Expand
	// RetryLater: not now; try again after a backoff.
	RetryLater
	// Infeasible: Size cannot be asked for at all (quantity.TooLarge); mark the
	// claim ControllerResizeInfeasible and never call the driver. Only a
	// new request ends it.
	Infeasible
)

func (a Action) String() string { return [...]string{"None", "Expand", "RetryLater", "Infeasible"}[a] }

// Reason says why. The set is closed; logs, events and tests use these.
type Reason string

const (
	// None.
	ReasonNotBound         Reason = "NotBound"         // the claim is not Bound to a volume
	ReasonNotOurs          Reason = "NotOurs"          // the PV is not a CSI volume of a served driver
	ReasonCannotExpand     Reason = "CannotExpand"     // the driver has neither controller nor node EXPAND_VOLUME
	ReasonBoundElsewhere   Reason = "BoundElsewhere"   // the PV's claimRef is not this claim
	ReasonNoRequest        Reason = "NoRequest"        // the request is not above status.capacity
	ReasonNodeExpansionDue Reason = "NodeExpansionDue" // the controller part is done; the node's is pending
	// RetryLater.
	ReasonVolumeNotFound    Reason = "VolumeNotFound"    // the PV named is not in the cache yet
	ReasonInfeasibleBackoff Reason = "InfeasibleBackoff" // the same size was infeasible; its slow retry is not due
	ReasonOfflineInUse      Reason = "OfflineInUse"      // an offline-only driver and a pod uses the claim
	// Expand: which size was chosen.
	ReasonRequested       Reason = "Requested"       // the claim's request
	ReasonResumeAllocated Reason = "ResumeAllocated" // the size an earlier expansion asked for, to finish it
	ReasonVolumeCapacity  Reason = "VolumeCapacity"  // the PV is already larger: ask for no less
	// Infeasible.
	ReasonSizeBeyondInt64 Reason = "SizeBeyondInt64" // no CSI request can carry the size
)

var reasonMessages = map[Reason]string{
	ReasonNotBound:          "the claim is not bound to a volume",
	ReasonNotOurs:           "the volume is not a CSI volume of a driver this resizer serves",
	ReasonCannotExpand:      "the driver can expand volumes neither on the controller nor on the node",
	ReasonBoundElsewhere:    "the volume is not bound to this claim",
	ReasonNoRequest:         "the request is not larger than the claim's capacity",
	ReasonNodeExpansionDue:  "the volume has grown; the node has to expand the file system",
	ReasonVolumeNotFound:    "the claim's volume is not known yet",
	ReasonInfeasibleBackoff: "the driver refused this size as infeasible; lower the request or wait for the slow retry",
	ReasonOfflineInUse:      "the driver expands only volumes no pod uses, and a pod uses this one",
	ReasonRequested:         "expand to the claim's request",
	ReasonResumeAllocated:   "finish the expansion already started (status.allocatedResources)",
	ReasonVolumeCapacity:    "the volume is already larger than the size asked for; volumes never shrink",
	ReasonSizeBeyondInt64:   "the size is more than a volume can be asked for; lower the request",
}

// Message is the sentence for a reason.
func (r Reason) Message() string { return reasonMessages[r] }

// Decision is what a sync decided, and why.
type Decision struct {
	Action Action
	Reason Reason
	// Size is the size to ask the driver for (Expand), never less than the
	// PV's capacity and always one Bytes converts; or the size refused
	// (Infeasible).
	Size resource.Quantity
}

func (d Decision) String() string {
	if d.Action == Expand {
		return fmt.Sprintf("%s %s: %s", d.Action, d.Size.String(), d.Reason)
	}
	return fmt.Sprintf("%s: %s", d.Action, d.Reason)
}

// Decide says whether to expand the claim's volume, and to which size,
// following the reference's recovery rules (expandAndRecover).
func Decide(f Facts) Decision {
	if d, stop := precheck(f); stop {
		return d
	}
	pvSize := f.Volume.Spec.Capacity[v1.ResourceStorage]
	size, reason, ok := chooseSize(f, pvSize)
	if !ok {
		return Decision{Action: None, Reason: reason}
	}
	if size.Cmp(pvSize) < 0 {
		size, reason = pvSize.DeepCopy(), ReasonVolumeCapacity
	}
	if _, ok := quantity.Bytes(size); !ok {
		return Decision{Action: Infeasible, Reason: ReasonSizeBeyondInt64, Size: size}
	}
	if f.InfeasibleBackoff && sameQuantity(f.Claim.Status.AllocatedResources, size) {
		return Decision{Action: RetryLater, Reason: ReasonInfeasibleBackoff}
	}
	if f.OfflineInUse {
		return Decision{Action: RetryLater, Reason: ReasonOfflineInUse}
	}
	return Decision{Action: Expand, Reason: reason, Size: size}
}

// precheck is every reason not to look at sizes at all.
func precheck(f Facts) (Decision, bool) {
	claim, pv := f.Claim, f.Volume
	switch {
	case claim.Status.Phase != v1.ClaimBound || claim.Spec.VolumeName == "":
		return Decision{Action: None, Reason: ReasonNotBound}, true
	case pv == nil:
		return Decision{Action: RetryLater, Reason: ReasonVolumeNotFound}, true
	case pv.Spec.CSI == nil || !f.Served:
		return Decision{Action: None, Reason: ReasonNotOurs}, true
	case !f.ControllerExpand && !f.NodeExpand:
		return Decision{Action: None, Reason: ReasonCannotExpand}, true
	case !BoundTo(pv, claim):
		return Decision{Action: None, Reason: ReasonBoundElsewhere}, true
	}
	request := claim.Spec.Resources.Requests[v1.ResourceStorage]
	capacity := claim.Status.Capacity[v1.ResourceStorage]
	if request.Cmp(capacity) <= 0 {
		return Decision{Action: None, Reason: ReasonNoRequest}, true
	}
	return Decision{}, false
}

// chooseSize is the reference's size rule; ok is false when an expansion
// already done waits for the node.
func chooseSize(f Facts, pvSize resource.Quantity) (resource.Quantity, Reason, bool) {
	spec := f.Claim.Spec.Resources.Requests[v1.ResourceStorage]
	allocated, hasAllocated := f.Claim.Status.AllocatedResources[v1.ResourceStorage]
	resume := func() (resource.Quantity, Reason, bool) {
		if hasAllocated {
			return allocated, ReasonResumeAllocated, true
		}
		return spec, ReasonRequested, true
	}
	status := ResizeStatus(f.Claim)
	if pvSize.Cmp(spec) < 0 {
		switch status {
		case v1.PersistentVolumeClaimNodeResizeInfeasible:
			return resume()
		case v1.PersistentVolumeClaimNodeResizePending, v1.PersistentVolumeClaimNodeResizeInProgress:
			if hasAllocated && pvSize.Cmp(allocated) >= 0 {
				return resource.Quantity{}, ReasonNodeExpansionDue, false
			}
			return resume()
		case v1.PersistentVolumeClaimControllerResizeInProgress:
			if f.FinalErrorSeen {
				return spec, ReasonRequested, true
			}
			return resume()
		}
		return spec, ReasonRequested, true
	}
	switch status {
	case v1.PersistentVolumeClaimNodeResizePending, v1.PersistentVolumeClaimNodeResizeInProgress:
		return resource.Quantity{}, ReasonNodeExpansionDue, false
	case v1.PersistentVolumeClaimNodeResizeInfeasible:
		if f.ControllerExpand {
			return resume()
		}
		return spec, ReasonRequested, true
	case "":
		if !hasAllocated && fileSystemResizePending(f.Claim) {
			// Written by a resizer from before allocatedResources.
			return resource.Quantity{}, ReasonNodeExpansionDue, false
		}
	}
	return resume()
}

func fileSystemResizePending(claim *v1.PersistentVolumeClaim) bool {
	for _, c := range claim.Status.Conditions {
		if c.Type == v1.PersistentVolumeClaimFileSystemResizePending && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}
