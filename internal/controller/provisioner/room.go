package provisioner

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/capacity"
	"github.com/volplane/volplane/internal/controller/inflight"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/provisioning"
)

// want is a plan's volume as the capacity accounting counts it: on the
// segment of the endpoint asked, for the class.
func want(class *storagev1.StorageClass, p plan) inflight.Want {
	w := inflight.Want{Driver: p.endpoint.Info.Driver, Segment: capacity.SegmentOf(p.endpoint.Info.Topology),
		Bytes: p.request.GetCapacityRange().GetRequiredBytes()}
	if class != nil {
		w.Class = class.Name
	}
	return w
}

// roomOnSelectedNode is the hand-back check of a claim on a selected node
// that no earlier attempt pinned (nothing can exist yet): its volume is
// counted as in flight, or, when the capacity loop's last answer for the
// node's segment less the volumes in flight there leaves no room, it is
// not (capacity.NoRoom). The caller releases the count on a path that
// never sends CreateVolume.
func (c *Controller) roomOnSelectedNode(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, p plan) capacity.Verdict {
	if claim.Annotations[annSelectedNode] == "" || claim.Annotations[provisioning.AnnEndpointNode] != "" {
		return capacity.Verdict{Fit: capacity.Unknown}
	}
	return c.ledger.Reserve(claim.UID, want(class, p), true)
}

// handBack gives the selected node back to the scheduler without asking the
// driver, as the lib does after a ResourceExhausted answer
// (rescheduleProvisioning): a Warning ProvisioningFailed with the verdict,
// and the selected-node annotation removed.
func (c *Controller) handBack(ctx context.Context, claim *v1.PersistentVolumeClaim, driver string, v capacity.Verdict) error {
	node := claim.Annotations[annSelectedNode]
	klog.FromContext(ctx).V(2).Info("Selected node has no room; handing it back", "node", node, "verdict", v.String())
	err := provisioning.Final(fmt.Errorf("node %q cannot hold this claim by the published capacity (%s); no CreateVolume was sent, the scheduler chooses again", node, v))
	return c.failed(ctx, claim, driver, err, provisioning.FailureOutcome{Reschedule: true})
}

// counted runs a CreateVolume with its volume counted as in flight on the
// endpoint's segment until the driver answers; a volume that may exist
// stays counted until the capacity loop asks the driver again.
func (c *Controller) counted(uid types.UID, class *storagev1.StorageClass, p plan, send func() error) {
	c.ledger.Reserve(uid, want(class, p), false)
	err := send()
	c.ledger.Settle(uid, !csierror.Final(err) && !csierror.OutOfRoom(err))
}

// deleted tells the capacity accounting that a volume went from an
// endpoint's segment.
func (c *Controller) deleted(e *csi.Endpoint) {
	c.ledger.Changed(e.Info.Driver, capacity.SegmentOf(e.Info.Topology))
}
