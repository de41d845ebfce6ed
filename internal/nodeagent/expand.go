package nodeagent

import (
	"context"
	"fmt"

	"github.com/volplane/volplane/internal/controller/secrets"

	"github.com/volplane/volplane/internal/csierror"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/expansion"
	"github.com/volplane/volplane/internal/mounting"
	"github.com/volplane/volplane/internal/quantity"
)

// The kubelet's event reasons for node expansion.
const (
	fileSystemResizeSuccessful = "FileSystemResizeSuccessful"
	fileSystemResizeFailed     = "FileSystemResizeFailed"
	volumeResizeFailed         = "VolumeResizeFailed"
)

// expand carries out a published volume's node expansion as decided: the
// claim marked in progress, NodeExpandVolume on the pod's publication, the
// claim finished in one write; a final driver error is written into the
// claim. The node's staging record moves to the new size once it is done,
// so the node does not expand it again. An error is returned for the pod
// to be retried with backoff.
func (a *Agent) expand(ctx context.Context, n *nodeState, pod *corev1.Pod, v *mounting.Volume, e *mounting.Expansion) error {
	logger := klog.FromContext(ctx)
	claim := v.Claim
	switch e.Mode {
	case mounting.RecordOnly:
		return recordSize(n, v, e.Size)
	case mounting.SkipReadOnly:
		msg := fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q requested read-only file system", v.PV.Name)
		n.recorder.Event(pod, corev1.EventTypeWarning, fileSystemResizeFailed, msg)
		n.recorder.Event(claim, corev1.EventTypeWarning, fileSystemResizeFailed, msg)
		return recordSize(n, v, e.Size)
	case mounting.ExpandAndFinish, mounting.FinishWithoutCall:
		var err error
		if claim, err = a.patchClaimStatus(ctx, claim, expansion.MarkNodeResizeInProgress(claim), claimstatus.IfUnchanged); err != nil {
			return fmt.Errorf("MountVolume.NodeExpandVolume failed to mark node expansion in progress: %w", err)
		}
	}
	if e.Mode != mounting.FinishWithoutCall {
		if err := a.nodeExpandVolume(ctx, n, pod, v, e.Size); err != nil {
			a.expandFailed(ctx, n, pod, claim, v, e, err)
			if csierror.InUse(err) {
				// As the kubelet: a volume that cannot grow in use keeps
				// no pod from running and is not tried online again at
				// this size while it stays staged.
				return updateRecord(n, v, func(d *mounting.VolData) { d.RefusedInUse = e.Size.String() })
			}
			return err
		}
		msg := fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", v.PV.Name, n.name)
		n.recorder.Event(pod, corev1.EventTypeNormal, fileSystemResizeSuccessful, msg)
		n.recorder.Event(claim, corev1.EventTypeNormal, fileSystemResizeSuccessful, msg)
	}
	if e.Mode != mounting.ExpandOnly {
		if _, err := a.patchClaimStatus(ctx, claim, expansion.MarkNodeResizeFinished(claim, e.Size), claimstatus.IfUnchanged); err != nil {
			return fmt.Errorf("mountVolume.NodeExpandVolume update pvc status failed: %w", err)
		}
	}
	logger.V(2).Info("Volume expanded on the node", "pod", klog.KObj(pod), "pvc", klog.KObj(claim), "pv", v.PV.Name,
		"node", n.name, "size", e.Size.String(), "mode", e.Mode)
	return recordSize(n, v, e.Size)
}

// expandFailed records a failed NodeExpandVolume: the kubelet's event
// (FailedMount during a mount, VolumeResizeFailed online) and, for a final
// error, the claim's NodeResizeError condition, with NodeResizeInfeasible
// when the same size cannot succeed.
func (a *Agent) expandFailed(ctx context.Context, n *nodeState, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim,
	v *mounting.Volume, e *mounting.Expansion, err error) {
	if e.AtMount {
		n.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.Setup failed while expanding volume for volume %q : %v", v.PV.Name, err)
	} else {
		n.recorder.Eventf(pod, corev1.EventTypeWarning, volumeResizeFailed, "NodeExpandVolume.NodeExpandVolume failed for volume %q : %v", v.PV.Name, err)
	}
	if e.Mode != mounting.ExpandAndFinish || !csierror.Final(err) {
		return
	}
	failed := expansion.MarkNodeResizeFailed(claim, err, csierror.ExpandInfeasible(err), metav1.Now())
	if _, perr := a.patchClaimStatus(ctx, claim, failed, claimstatus.Always); perr != nil {
		klog.FromContext(ctx).Error(perr, "Cannot record the failed node expansion", "pvc", klog.KObj(claim), "node", n.name)
	}
}

// nodeExpandVolume calls the driver: the volume path is the pod's
// publication, the staging path is given when the driver stages.
func (a *Agent) nodeExpandVolume(ctx context.Context, n *nodeState, pod *corev1.Pod, v *mounting.Volume, size resource.Quantity) error {
	e, err := n.endpoint(v.Driver)
	if err != nil {
		return err
	}
	bytes, ok := quantity.Bytes(size)
	if !ok {
		return quantity.TooLarge(size)
	}
	secrets, err := a.nodeExpandSecrets(ctx, v.PV)
	if err != nil {
		return err
	}
	req := &csipb.NodeExpandVolumeRequest{VolumeId: v.Handle, VolumePath: n.layout.TargetPath(pod.UID, v.PV.Name),
		CapacityRange: &csipb.CapacityRange{RequiredBytes: bytes}, VolumeCapability: capability(v.PV), Secrets: secrets}
	if e.Info.Stage {
		req.StagingTargetPath = n.layout.StagingPath(v.Driver, v.Handle)
	}
	if _, err := e.NodeExpandVolume(ctx, req); err != nil {
		// The kubelet's text, capital and all: users match on it.
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
	dir := n.layout.StagingDir(v.Driver, v.Handle)
	data, ok, err := readVolData(dir)
	if err != nil || !ok {
		return err
	}
	change(&data)
	return writeVolData(dir, data)
}
