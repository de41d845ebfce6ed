package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/controller/secrets"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/mounting"
)

// stage is the kubelet's MountDevice: record the staging in its
// vol_data.json, call NodeStageVolume if the driver stages, and record that
// it succeeded.
func (a *Agent) stage(ctx context.Context, n *nodeState, w mounting.World, pod *corev1.Pod, v *mounting.Volume) error {
	e := n.endpoints[v.Driver]
	dir, staging := n.layout.StagePaths(v.Block, v.Driver, v.Handle, v.PV.Name)
	data := mounting.StagingRecord(n.name, v)
	if err := writeVolData(dir, data); err != nil {
		return err
	}
	stages := w.Drivers[v.Driver].Stage
	if v.Block && stages {
		// The block mapper makes the staging directory; the driver puts
		// what it wants in it.
		if err := os.MkdirAll(staging, 0o750); err != nil {
			return fmt.Errorf("kubernetes.io/csi: blockMapper.stageVolumeForBlock failed to create dir %s: %w", staging, err)
		}
	}
	if stages {
		req := n.layout.StageRequest(w, pod, v)
		var err error
		if req.Secrets, err = a.nodeSecrets(ctx, "NodeStageSecretRef", v.PV.Spec.CSI.NodeStageSecretRef); err != nil {
			return err
		}
		if err := e.NodeStageVolume(ctx, req); err != nil {
			return finished(err, v.Block, dir, staging)
		}
	}
	data.Done = true
	return writeVolData(dir, data)
}

// publish is the kubelet's SetUp: record the publication, call
// NodePublishVolume, record that it succeeded.
func (a *Agent) publish(ctx context.Context, n *nodeState, w mounting.World, pod *corev1.Pod, v *mounting.Volume) error {
	if v.PublishRefused != "" {
		return errors.New(v.PublishRefused)
	}
	e := n.endpoints[v.Driver]
	req := n.layout.PublishRequest(w, pod, v)
	var err error
	if req.Secrets, err = a.nodeSecrets(ctx, "NodePublishSecretRef", v.PublishSecretRef(pod)); err != nil {
		return err
	}
	if tokens := w.TokensFor(v, pod); tokens != nil {
		attrs, err := a.tokens(ctx, pod, tokens)
		if err != nil {
			return errors.New(mounting.TokenFailure(err))
		}
		req.VolumeContext, req.Secrets = tokens.WithTokens(req.VolumeContext, req.Secrets, attrs)
	}
	dir, _ := n.layout.PublishPaths(v.Block, pod.UID, v.SpecName())
	data := mounting.PublicationRecord(n.name, v)
	if err := writeVolData(dir, data); err != nil {
		return err
	}
	if v.Block {
		// The driver makes the target file; the block mapper its directory.
		if err := os.MkdirAll(filepath.Dir(req.TargetPath), 0o750); err != nil {
			return fmt.Errorf("kubernetes.io/csi: blockMapper.publishVolumeForBlock failed to create dir %s: %w", filepath.Dir(req.TargetPath), err)
		}
	}
	if err := e.NodePublishVolume(ctx, req); err != nil {
		return finished(err, v.Block, dir, req.TargetPath)
	}
	if o := w.OwnershipFor(pod, v); o != nil {
		// Published but not usable: the record stays not done, an
		// uncertain mount, as the kubelet's.
		if err := applyOwnership(req.TargetPath, o); err != nil {
			return fmt.Errorf("applyFSGroup failed for vol %s: %w", v.Handle, err)
		}
	}
	data.Done = true
	return writeVolData(dir, data)
}

// finished handles a failed NodeStageVolume or NodePublishVolume as the
// kubelet does: an answer that ends the operation (csierror.OperationFinal)
// means nothing was mounted, so the record and its directories go (while
// the mount point is empty) and nothing is torn down later; any other
// error leaves the record not done, an uncertain mount the teardown
// undoes. The error is returned as the driver gave it: the kubelet's event
// text is "<operation> failed for volume ... : rpc error: ...".
func finished(err error, block bool, dir, mountPoint string) error {
	if csierror.OperationFinal(err) {
		if rerr := removeRecord(block, dir, mountPoint); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// tokens requests the pod's service account tokens a CSIDriver asks for,
// as the kubelet does at every publish.
func (a *Agent) tokens(ctx context.Context, pod *corev1.Pod, t *mounting.Tokens) (map[string]string, error) {
	var statuses []authenticationv1.TokenRequestStatus
	for _, req := range t.Requests {
		tr, err := a.cfg.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, req, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		statuses = append(statuses, tr.Status)
	}
	return t.Attributes(statuses)
}

// nodeSecrets reads the secret a PV names for a node call (field says
// which), as the kubelet does right before the call: a secret that cannot
// be read fails the mount, with the kubelet's text.
func (a *Agent) nodeSecrets(ctx context.Context, field string, ref *corev1.SecretReference) (map[string]string, error) {
	out, err := secrets.Read(ctx, a.cfg.Client, ref)
	if err != nil {
		return nil, fmt.Errorf("fetching %s %s/%s failed: kubernetes.io/csi: failed to find the secret %s in the namespace %s with error: %w",
			field, ref.Namespace, ref.Name, ref.Name, ref.Namespace, err)
	}
	return out, nil
}

// unpublish is the kubelet's TearDown; the record goes once the driver
// unpublished (NotFound: it was not published, the work is done).
func (a *Agent) unpublish(ctx context.Context, n *nodeState, p mounting.Published) error {
	e, err := n.endpoint(p.Driver)
	if err != nil {
		return err
	}
	dir, target := n.layout.PublishPaths(p.Block, p.PodUID, p.PV)
	if err := e.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: p.Handle, TargetPath: target}); err != nil && !csierror.NotFound(err) {
		return fmt.Errorf("UnmountVolume.TearDown failed for volume %q: rpc NodeUnpublishVolume: %w", p.PV, err)
	}
	return removeRecord(p.Block, dir, target)
}

// unstage is the kubelet's UnmountDevice.
func (a *Agent) unstage(ctx context.Context, n *nodeState, s mounting.Staged) error {
	e, err := n.endpoint(s.Driver)
	if err != nil {
		return err
	}
	dir, path := n.layout.StagePaths(s.Block, s.Driver, s.Handle, s.PV)
	info, err := e.NodeCapabilities(ctx) // the kubelet's NodeSupportsStageUnstage
	if err != nil {
		return fmt.Errorf("UnmountDevice failed for volume %q: NodeGetCapabilities: %w", s.PV, err)
	}
	if info.Stage {
		err := e.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: s.Handle, StagingTargetPath: path})
		if err != nil && !csierror.NotFound(err) {
			return fmt.Errorf("UnmountDevice failed for volume %q: rpc NodeUnstageVolume: %w", s.PV, err)
		}
	}
	return removeRecord(s.Block, dir, path)
}

func (n *nodeState) endpoint(driver string) (*csi.Endpoint, error) {
	e, ok := n.endpoints[driver]
	if !ok {
		return nil, fmt.Errorf("driver name %s not found in the list of registered CSI drivers of node %s", driver, n.name)
	}
	return e, nil
}
