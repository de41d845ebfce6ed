package provisioner

import (
	"context"
	"fmt"
	"slices"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/provisioning"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/csi"
)

// cleanup runs for a claim with our finalizer that no longer wants a volume
// (deleted, or bound to another PV) and has no PV: a backend volume may
// exist. CreateVolume with the same request returns it if it does (or makes
// it), DeleteVolume removes it; only then does the finalizer go.
func (c *Controller) cleanup(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	// The finalizer on the live claim is the record that a cleanup is
	// owed. A cached copy from before it went (an earlier cleanup's) would
	// replay the create, making again the volume that cleanup deleted, and
	// nothing would be left to delete it (a soak leak, seed 390067).
	live, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil // gone: a create still unsettled is syncOrphan's
	case err != nil:
		return fmt.Errorf("get claim %s/%s: %w", claim.Namespace, claim.Name, err)
	case live.UID != claim.UID || !slices.Contains(live.Finalizers, provisioning.ClaimFinalizer):
		return nil
	}
	claim = live
	// The lister may lag behind a PV create: ask the API server before
	// deleting anything a PV may own.
	_, err = c.client.CoreV1().PersistentVolumes().Get(ctx, provisioning.VolumeName(claim), metav1.GetOptions{})
	switch {
	case err == nil:
		c.memory.creates.settled(claim.UID)
		if err := c.releaseSource(ctx, claim); err != nil {
			return err
		}
		_, err := c.dropFinalizer(ctx, claim)
		return err
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get PV %s: %w", provisioning.VolumeName(claim), err)
	}
	driver := provisioning.ClaimDriver(claim)
	p, exact, err := c.cleanupPlan(ctx, claim, class, driver)
	if err == nil {
		err = deleteBackend(ctx, p, exact)
	}
	if err != nil {
		c.event(claim, claim.UID, driver, v1.EventTypeWarning, provisioning.EventCleanupFailed,
			"failed to delete the volume that may have been provisioned for the claim: %v", err)
		return err
	}
	klog.FromContext(ctx).V(2).Info("Cleaned up the backend volume of a claim that went away", "driver", driver)
	c.memory.creates.settled(claim.UID)
	if err := c.releaseSource(ctx, claim); err != nil {
		return err
	}
	_, err = c.dropFinalizer(ctx, claim)
	return err
}

// syncOrphan cleans up after a claim that went away (its delete event,
// keyed by UID) while a create of ours for it was unsettled
// (createMemory): nothing on the claim holds the volume any more, so the
// remembered plan is replayed and the volume deleted, with backoff until
// that succeeds or the driver says none exists. A PV made meanwhile owns
// the volume (the binder releases it, its reclaim policy decides).
func (c *Controller) syncOrphan(ctx context.Context, key string) (loop.Result, error) {
	uid := types.UID(key)
	r, ok := c.memory.creates.get(uid)
	if !ok {
		return loop.Done(), nil
	}
	name := provisioning.VolumeName(r.claim)
	logger := klog.FromContext(ctx).WithValues("pvc", klog.KObj(r.claim), "uid", uid)
	if cur, err := c.read.claims.PersistentVolumeClaims(r.claim.Namespace).Get(r.claim.Name); err == nil && cur.UID == uid {
		return loop.Done(), nil // not gone after all (a relist's tombstone): its own syncs settle it
	}
	if r.inFlight {
		return loop.Done(), fmt.Errorf("the CreateVolume of deleted claim %s/%s is still running; cleaning up once it returns", r.claim.Namespace, r.claim.Name)
	}
	_, err := c.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		logger.V(2).Info("The PV of a deleted claim owns its volume", "pv", name)
		c.memory.creates.settled(uid)
		return loop.Done(), nil
	case !apierrors.IsNotFound(err):
		return loop.Done(), fmt.Errorf("get PV %s: %w", name, err)
	}
	driver := r.plan.endpoint.Info.Driver
	if err := deleteBackend(klog.NewContext(ctx, logger), r.plan, true); err != nil {
		c.event(r.claim, uid, driver, v1.EventTypeWarning, provisioning.EventCleanupFailed,
			"failed to delete the volume that may have been provisioned for the claim, which was deleted meanwhile: %v", err)
		return loop.Done(), err
	}
	logger.V(2).Info("Cleaned up the backend volume of a deleted claim whose create was unsettled", "driver", driver)
	c.memory.creates.settled(uid)
	return loop.Done(), c.releaseSource(ctx, r.claim)
}

// deleteBackend replays the request that may have made the claim's volume:
// the driver returns the volume if it exists (or makes it), and then it is
// deleted. To the exact request a final answer other than AlreadyExists
// means the driver holds no such volume. AlreadyExists means a volume of
// that name exists that the replayed request does not match: its ID cannot
// be learned, so the finalizer stays and the user is told. To a request
// rebuilt without what made the volume, no final answer proves anything.
func deleteBackend(ctx context.Context, p plan, exact bool) error {
	// Asked as provisioning asks (create): a ResourceExhausted answer from
	// a driver that made the volume anyway is confirmed before it counts.
	vol, err := create(ctx, p)
	switch {
	case csierror.AlreadyExists(err):
		return fmt.Errorf("volume %s exists but does not match the request rebuilt to find it (%w); delete it on the backend, then remove the finalizer %s from the claim",
			p.request.GetName(), err, provisioning.ClaimFinalizer)
	case csierror.Final(err) && !exact:
		return fmt.Errorf("the request rebuilt without the claim's class or clone source was refused (%w), which does not prove that no volume %s exists; if none does, remove the finalizer %s from the claim",
			err, p.request.GetName(), provisioning.ClaimFinalizer)
	case csierror.Final(err):
		klog.FromContext(ctx).V(2).Info("No backend volume to clean up", "err", err)
		return nil
	case err != nil:
		return err
	}
	if err := p.endpoint.DeleteVolume(ctx, vol.GetVolumeId(), p.request.Secrets); err != nil && !csierror.NotFound(err) {
		return err
	}
	return nil
}

// cleanupPlan is the request that may have made the claim's volume and the
// endpoint it went to; exact says the request is the one sent:
//   - the plan this process remembers sending (createMemory): exact;
//   - the request recorded with the finalizer (AnnCreateRequest), if it
//     passes its check (trustedRecord), which needs neither the class nor
//     the clone source any more: exact;
//   - without a record that passes: the class's plan, as when provisioning
//     (exact), or without the clone source if that is gone;
//   - with its class gone too: a request built from the claim alone.
//
// All go to the pinned endpoint, once it passes its check (provisioning.CheckPin), so
// each finds the volume if the driver matches existing volumes by name,
// size and access type. Every request is named pvc-<the claim's UID>:
// nothing written on the claim makes the cleanup reach another volume.
func (c *Controller) cleanupPlan(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string) (p plan, exact bool, err error) {
	if r, ok := c.memory.creates.get(claim.UID); ok {
		return r.plan, true, nil
	}
	if class != nil && !provisioning.ProvisionsFor(class, driver) {
		class = nil // not the class of the driver the claim names: it gives nothing
	}
	req, recorded := c.trustedRecord(ctx, claim, class, driver)
	if !recorded && class != nil {
		if p, err := c.plan(ctx, claim, class, driver, forCleanup); err == nil {
			return p, true, nil
		}
		p, err := c.plan(ctx, claim, class, driver, forCleanupWithoutSource)
		return p, false, err
	}
	if recorded && class != nil {
		// The record holds no secrets: the provisioner secret is read
		// again while the class that names it exists (else the driver
		// decides without it, as for a secret deleted meanwhile).
		req.Secrets = c.cleanupSecrets(ctx, claim, class, req.GetName())
	}
	info, ok := c.pool.Info(driver)
	if !ok {
		return plan{}, false, fmt.Errorf("no CSI endpoint serves driver %q; waiting for it", driver)
	}
	if !recorded {
		if req, err = provisioning.ClaimOnlyRequest(claim, driverOf(info)); err != nil {
			return plan{}, false, err
		}
	}
	eps := c.pool.Endpoints(driver)
	i, err := provisioning.CleanupEndpoint(endpointsOf(eps), claim.Annotations[provisioning.AnnEndpointNode])
	if err != nil {
		return plan{}, false, err
	}
	ep := eps[i]
	if err := c.checkCleanupPin(claim, class, driver, info, ep); err != nil {
		return plan{}, false, err
	}
	if info.Accessibility && len(ep.Info.Topology) > 0 {
		req.AccessibilityRequirements = provisioning.NarrowedTo(endpointOf(ep))
	}
	return plan{request: req, endpoint: ep}, recorded, nil
}

// trustedRecord is the request recorded on the claim if it passes its
// check (provisioning.WhyNotOurs); ok is false without one. A record that fails, or
// cannot be read, is never replayed: it is reported, and the volume is
// looked for as if none were recorded, by requests named for this claim.
func (c *Controller) trustedRecord(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string) (*csipb.CreateVolumeRequest, bool) {
	req, ok, err := provisioning.RecordedRequest(claim)
	var why string
	switch {
	case err != nil:
		why = err.Error()
	case !ok:
		return nil, false
	default:
		why = provisioning.WhyNotOurs(req, c.recordFacts(ctx, claim, class, driver))
	}
	if why == "" {
		return req, true
	}
	c.event(claim, claim.UID, driver, v1.EventTypeWarning, provisioning.EventRecordRejected,
		"ignored the CreateVolume request recorded in annotation %s: %s; the claim's volume is looked for without it", provisioning.AnnCreateRequest, why)
	return nil, false
}

// checkCleanupPin is provisioning.CheckPin for the endpoint a cleanup would ask: within
// the selected node, and the class's allowed topologies while the class
// exists. A pin that fails is never asked: the finalizer stays, and the
// error says so.
func (c *Controller) checkCleanupPin(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string, info csi.Info, ep *csi.Endpoint) error {
	if class == nil {
		class = &storagev1.StorageClass{}
	}
	in := provisioning.RequestFacts{Claim: claim, Class: class, Driver: driverOf(info)}
	if info.Accessibility {
		in.TopologyKeys = c.pool.TopologyKeys(driver)
	}
	var err error
	if len(in.TopologyKeys) > 0 {
		if in.Selected, err = c.selectedNode(claim, driver); err != nil {
			return err
		}
	}
	segs, err := provisioning.PinSegments(in)
	if err != nil {
		return err
	}
	if err := provisioning.CheckPin(endpointOf(ep), segs); err != nil {
		return fmt.Errorf("%w; it is not asked: if no volume %s exists on the backend, remove the finalizer %s from the claim", err, provisioning.VolumeName(claim), provisioning.ClaimFinalizer)
	}
	return nil
}

// cleanupSecrets is the provisioner secret's data for the cleanup of a
// recorded request; nil, logged, when it cannot be resolved or read.
func (c *Controller) cleanupSecrets(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, pvName string) map[string]string {
	refs, err := provisioning.ResolveSecretRefs(class.Parameters, pvName, claim)
	if err == nil {
		var creds map[string]string
		if creds, err = c.credentials(ctx, refs[provisioning.ProvisionerSecret]); err == nil {
			return creds
		}
	}
	klog.FromContext(ctx).Info("Cleaning up without the provisioner secret, which cannot be read", "err", err)
	return nil
}
