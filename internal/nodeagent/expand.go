package nodeagent

import (
	"context"
	"fmt"

	"github.com/volplane/volplane/internal/controller/secrets"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/expansion"
	"github.com/volplane/volplane/internal/mounting"
	"github.com/volplane/volplane/internal/quantity"
)

// expand carries out a published volume's node expansion as decided, in
// the order of mounting.Expansion.Ops: the read-only warning, the claim
// marked in progress, NodeExpandVolume on the pod's publication, the claim
// finished in one write, the node's staging record moved to the new size
// (so the node does not expand it again). A failed call is handled as
// mounting.Expansion.Failed says. An error is returned for the pod to be
// retried with backoff.
func (a *Agent) expand(ctx context.Context, n *nodeState, w mounting.World, pod *corev1.Pod, v *mounting.Volume, e *mounting.Expansion) error {
	claim := v.Claim
	for _, op := range e.Ops() {
		switch op {
		case mounting.WarnReadOnly:
			msg := mounting.ReadOnlyMessage(v.PV.Name)
			n.recorder.Event(pod, corev1.EventTypeWarning, mounting.FileSystemResizeFailed, msg)
			n.recorder.Event(claim, corev1.EventTypeWarning, mounting.FileSystemResizeFailed, msg)
		case mounting.MarkInProgress:
			var err error
			if claim, err = a.patchClaimStatus(ctx, claim, expansion.MarkNodeResizeInProgress(claim), claimstatus.IfUnchanged); err != nil {
				return fmt.Errorf("MountVolume.NodeExpandVolume failed to mark node expansion in progress: %w", err)
			}
		case mounting.CallNodeExpand:
			if err := a.nodeExpandVolume(ctx, n, w, pod, v, e.Size); err != nil {
				return a.expandFailed(ctx, n, pod, claim, v, e, err)
			}
			msg := mounting.ExpandedMessage(v.PV.Name, n.name)
			n.recorder.Event(pod, corev1.EventTypeNormal, mounting.FileSystemResizeSuccessful, msg)
			n.recorder.Event(claim, corev1.EventTypeNormal, mounting.FileSystemResizeSuccessful, msg)
		case mounting.FinishClaim:
			if _, err := a.patchClaimStatus(ctx, claim, expansion.MarkNodeResizeFinished(claim, e.Size), claimstatus.IfUnchanged); err != nil {
				return fmt.Errorf("mountVolume.NodeExpandVolume update pvc status failed: %w", err)
			}
		case mounting.RecordSize:
			if err := recordSize(n, v, e.Size); err != nil {
				return err
			}
		}
	}
	if e.Mode != mounting.RecordOnly && e.Mode != mounting.SkipReadOnly {
		klog.FromContext(ctx).V(2).Info("Volume expanded on the node", "pod", klog.KObj(pod), "pvc", klog.KObj(claim), "pv", v.PV.Name,
			"node", n.name, "size", e.Size.String(), "mode", e.Mode)
	}
	return nil
}

// expandFailed records a failed NodeExpandVolume as decided: the pod's
// event; for a final error the claim's NodeResizeError condition; for a
// volume that cannot grow in use the refused size in the node's record,
// and no error, so the pod is not held back.
func (a *Agent) expandFailed(ctx context.Context, n *nodeState, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim,
	v *mounting.Volume, e *mounting.Expansion, err error) error {
	f := e.Failed(v.PV.Name, err)
	n.recorder.Event(pod, corev1.EventTypeWarning, f.EventReason, f.EventMessage)
	if f.MarkFailed {
		failed := expansion.MarkNodeResizeFailed(claim, err, f.Infeasible, metav1.NewTime(a.cfg.Clock.Now()))
		if _, perr := a.patchClaimStatus(ctx, claim, failed, claimstatus.Always); perr != nil {
			klog.FromContext(ctx).Error(perr, "Cannot record the failed node expansion", "pvc", klog.KObj(claim), "node", n.name)
		}
	}
	if f.RefusedInUse {
		return updateRecord(n, v, func(d *mounting.VolData) { d.RefusedInUse = e.Size.String() })
	}
	return err
}

// nodeExpandVolume calls the driver with mounting's request and the PV's
// nodeExpandSecretRef.
func (a *Agent) nodeExpandVolume(ctx context.Context, n *nodeState, w mounting.World, pod *corev1.Pod, v *mounting.Volume, size resource.Quantity) error {
	e, err := n.endpoint(v.Driver)
	if err != nil {
		return err
	}
	bytes, ok := quantity.Bytes(size)
	if !ok {
		return quantity.TooLarge(size)
	}
	req := n.layout.ExpandRequest(w, pod, v, bytes)
	if req.Secrets, err = a.nodeExpandSecrets(ctx, v.PV); err != nil {
		return err
	}
	if _, err := e.NodeExpandVolume(ctx, req); err != nil {
		// The kubelet's texts, capital, missing colon and all: users
		// match on them.
		if csierror.ExpandInfeasible(err) {
			return fmt.Errorf("Expander.NodeExpand failed to expand the volume %w", err)
		}
		return fmt.Errorf("Expander.NodeExpand failed to expand the volume : %w", err)
	}
	return nil
}

// nodeExpandSecrets reads the PV's nodeExpandSecretRef, if any.
func (a *Agent) nodeExpandSecrets(ctx context.Context, pv *corev1.PersistentVolume) (map[string]string, error) {
	ref := pv.Spec.CSI.NodeExpandSecretRef
	out, err := secrets.Read(ctx, a.cfg.Client, ref)
	if err != nil {
		return nil, fmt.Errorf("expander.NodeExpand failed to get NodeExpandSecretRef %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return out, nil
}

// patchClaimStatus writes the change from claim to want (nil: nothing to
// write) to the status, and returns the claim as the server has it. Under
// IfUnchanged the write fails on a claim changed meanwhile (the
// informer's copy may be behind: the retry reads again).
func (a *Agent) patchClaimStatus(ctx context.Context, claim, want *corev1.PersistentVolumeClaim, pre claimstatus.Precondition) (*corev1.PersistentVolumeClaim, error) {
	out, err := resizing.WriteClaim(ctx, a.cfg.Client, claim, want, pre)
	if err != nil {
		return out, fmt.Errorf("patch PVC %s/%s status: %w", claim.Namespace, claim.Name, err)
	}
	return out, nil
}

// recordSize moves the node's staging record of the volume to size.
func recordSize(n *nodeState, v *mounting.Volume, size resource.Quantity) error {
	return updateRecord(n, v, func(d *mounting.VolData) { d.Size = size.String() })
}

// updateRecord changes the node's staging record of the volume.
func updateRecord(n *nodeState, v *mounting.Volume, change func(*mounting.VolData)) error {
	dir, _ := n.layout.StagePaths(v.Block, v.Driver, v.Handle, v.PV.Name)
	data, ok, err := readVolData(dir)
	if err != nil || !ok {
		return err
	}
	change(&data)
	return writeVolData(dir, data)
}
