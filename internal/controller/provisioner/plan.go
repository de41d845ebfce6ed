package provisioner

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/provisioning"
	"github.com/volplane/volplane/internal/snapshotapi"
)

const annSelectedNode = volumehelpers.AnnSelectedNode

// plan is a CreateVolume request, the endpoint it goes to, and the secret
// references the PV records.
type plan struct {
	request  *csipb.CreateVolumeRequest
	endpoint *csi.Endpoint
	secrets  provisioning.SecretRefs
}

// planPurpose says what a plan is built for.
type planPurpose int

const (
	// forCreate: everything the request is built from must resolve.
	forCreate planPurpose = iota
	// forCleanup: the request of an earlier attempt, to find and delete
	// what it made. The provisioner secret may be gone (deleted with its
	// namespace): the request goes without it, and the driver decides.
	forCleanup
	// forCleanupWithoutSource is forCleanup without the data source, whose
	// claim may be gone by then.
	forCleanupWithoutSource
)

// plan reads what the request is built from and builds it. Building the
// same plan again for the same claim gives the same request to the same
// endpoint, which is what makes a retry (or the cleanup of a deleted claim)
// reach the volume an earlier attempt made.
func (c *Controller) plan(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string, purpose planPurpose) (plan, error) {
	info, ok := c.pool.Info(driver)
	if !ok {
		return plan{}, provisioning.Final(fmt.Errorf("no CSI endpoint serves driver %q", driver))
	}
	in, err := c.topologyInput(claim, class, driver, info)
	if err != nil {
		return plan{}, err
	}
	if purpose != forCleanupWithoutSource {
		if in, err = c.withSource(ctx, in, info, purpose); err != nil {
			return plan{}, err
		}
	}
	req, err := provisioning.BuildRequest(in)
	if err != nil {
		return plan{}, err
	}
	if req.MutableParameters, err = c.mutableParameters(claim, info); err != nil {
		return plan{}, err
	}
	refs, err := provisioning.ResolveSecretRefs(class.Parameters, req.Name, claim)
	if err != nil {
		return plan{}, err
	}
	if req.Secrets, err = c.credentials(ctx, refs[provisioning.ProvisionerSecret]); err != nil {
		if purpose == forCreate {
			return plan{}, err
		}
		klog.FromContext(ctx).Info("Cleaning up without the provisioner secret, which cannot be read", "err", err)
	}
	p := plan{request: req, endpoint: c.pool.ForCreate(driver, req.GetAccessibilityRequirements()), secrets: refs}
	if node := claim.Annotations[provisioning.AnnEndpointNode]; node != "" {
		return c.pinnedPlan(p, in, driver, node)
	}
	if purpose == forCreate {
		if err := provisioning.OutsideTopology(endpointOf(p.endpoint), req.GetAccessibilityRequirements()); err != nil {
			return plan{}, provisioning.Final(err)
		}
	}
	return p, nil
}

// topologyInput is the request input with what the request's topology is
// built from: the selected node, or, without one and without allowed
// topologies in the class, every node.
func (c *Controller) topologyInput(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string, info csi.Info) (provisioning.RequestFacts, error) {
	in := provisioning.RequestFacts{Claim: claim, Class: class, Driver: driverOf(info), TopologyKeys: c.pool.TopologyKeys(driver)}
	if !info.Accessibility || len(in.TopologyKeys) == 0 {
		return in, nil
	}
	var err error
	if in.Selected, err = c.selectedNode(claim, driver); err != nil {
		return in, err
	}
	if in.Selected == nil && len(class.AllowedTopologies) == 0 {
		if in.Nodes, err = c.read.nodes.List(labels.Everything()); err != nil {
			return in, err
		}
	}
	return in, nil
}

// pinnedPlan sends the request to the endpoint an earlier attempt asked
// (provisioning.PinnedEndpoint), narrowed to that endpoint's topology,
// since that is where a volume of this name may already exist.
func (c *Controller) pinnedPlan(p plan, in provisioning.RequestFacts, driver, node string) (plan, error) {
	segs, err := provisioning.PinSegments(in)
	if err != nil {
		return plan{}, err
	}
	eps := c.pool.Endpoints(driver)
	i, err := provisioning.PinnedEndpoint(driver, endpointsOf(eps), node, segs)
	if err != nil {
		return plan{}, err
	}
	if p.request.AccessibilityRequirements != nil && len(eps[i].Info.Topology) > 0 {
		p.request.AccessibilityRequirements = provisioning.NarrowedTo(endpointOf(eps[i]))
	}
	p.endpoint = eps[i]
	return p, nil
}

// fallbacks are the plans to try, in the claim's order of preference, when
// the planned endpoint has no room: one per other preferred segment served,
// each narrowed to its endpoint. Only for a claim free to move (provision
// decides): a pinned claim or one on a selected node goes where it was sent.
func (c *Controller) fallbacks(driver string, p plan) []plan {
	var out []plan
	for _, seg := range p.request.GetAccessibilityRequirements().GetPreferred() {
		e := c.pool.ForSegment(driver, seg.GetSegments())
		if e == nil || e == p.endpoint || e.Info.NodeID == "" {
			continue
		}
		req := proto.Clone(p.request).(*csipb.CreateVolumeRequest)
		req.AccessibilityRequirements = provisioning.NarrowedTo(endpointOf(e))
		out = append(out, plan{request: req, endpoint: e, secrets: p.secrets})
	}
	return out
}

// selectedNode is the claim's selected node, nil without one; a node the
// lister does not know is provisioning.SelectedNodeGone's.
func (c *Controller) selectedNode(claim *v1.PersistentVolumeClaim, driver string) (*v1.Node, error) {
	name := claim.Annotations[annSelectedNode]
	if name == "" {
		return nil, nil
	}
	node, err := c.read.nodes.Get(name)
	if err == nil {
		return node, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	return provisioning.SelectedNodeGone(name, endpointsOf(c.pool.Endpoints(driver)))
}

// withSource adds the claim's data source to the request facts: the
// volume of a source claim (sourceVolume) or the snapshot to restore
// (snapshotSource), and where that source lives.
func (c *Controller) withSource(ctx context.Context, in provisioning.RequestFacts, info csi.Info, purpose planPurpose) (provisioning.RequestFacts, error) {
	kind, name, err := provisioning.SourceRefusal(in.Claim, driverOf(info))
	if err != nil || kind == provisioning.NoSource {
		return in, err
	}
	if kind == provisioning.CloneSource {
		if purpose == forCreate {
			if err := c.sourceDeleting(in.Claim, name); err != nil {
				return in, err
			}
		}
		src, err := c.boundSource(in.Claim, name, info.Driver)
		if err != nil {
			return in, err
		}
		in.SourceHandle, in.SourceAt = src.Spec.CSI.VolumeHandle, provisioning.AccessibleFrom(src)
		return in, nil
	}
	r := c.readSnapshot(ctx, in.Claim.Namespace, name)
	if purpose == forCreate {
		var src *csipb.VolumeContentSource
		if src, err = provisioning.RestoreSource(in.Claim, r, in.Class.Name, info.Driver); err != nil {
			return in, fmt.Errorf("error getting handle for DataSource Type %s by Name %s: %w", snapshotapi.KindSnapshot, name, err)
		}
		in.Snapshot = src.GetSnapshot().GetSnapshotId()
	} else if in.Snapshot, err = provisioning.SnapshotHandle(r, in.Class.Name, info.Driver); err != nil {
		return in, err
	}
	in.SourceAt, err = c.snapshotAt(ctx, info, r.Content, in.Snapshot)
	return in, err
}

// sourceDeleting is provisioning.SourceClaimDeleting for the source claim
// name (one that does not exist is boundSource's to report).
func (c *Controller) sourceDeleting(claim *v1.PersistentVolumeClaim, name string) error {
	src, err := c.read.claims.PersistentVolumeClaims(claim.Namespace).Get(name)
	if err != nil {
		return nil
	}
	return provisioning.SourceClaimDeleting(claim, c.memory.newClaim.Newer(binding.ClaimKey(src), src))
}

// boundSource is the PV of the source claim name, read and checked both
// ways (provisioning.SourceClaimProblem, SourceVolumeProblem): only then
// is its volume the source claim's own.
func (c *Controller) boundSource(claim *v1.PersistentVolumeClaim, name, driver string) (*v1.PersistentVolume, error) {
	src, err := c.read.claims.PersistentVolumeClaims(claim.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("data source claim %q does not exist", name)
	}
	if err != nil {
		return nil, err
	}
	if err := provisioning.SourceClaimProblem(claim, src); err != nil {
		return nil, err
	}
	pv, err := c.read.pvs.Get(src.Spec.VolumeName)
	if err != nil {
		return nil, fmt.Errorf("volume %q of data source claim %q: %w", src.Spec.VolumeName, name, err)
	}
	if err := provisioning.SourceVolumeProblem(src, pv, driver); err != nil {
		return nil, err
	}
	return pv, nil
}

// driverOf is what provisioning needs to know of a driver, from what its
// endpoints reported.
func driverOf(info csi.Info) provisioning.Driver {
	return provisioning.Driver{Name: info.Driver, Accessibility: info.Accessibility,
		Clone: info.Clone, Snapshot: info.Snapshot, Modify: info.Modify, Publish: info.Publish}
}

// endpointOf is where an endpoint runs, as provisioning sees it (nil: the
// zero Endpoint, which no rule objects to).
func endpointOf(e *csi.Endpoint) provisioning.Endpoint {
	if e == nil {
		return provisioning.Endpoint{}
	}
	return provisioning.Endpoint{Driver: e.Info.Driver, NodeID: e.Info.NodeID, Topology: e.Info.Topology}
}

func endpointsOf(eps []*csi.Endpoint) []provisioning.Endpoint {
	out := make([]provisioning.Endpoint, len(eps))
	for i, e := range eps {
		out[i] = endpointOf(e)
	}
	return out
}
