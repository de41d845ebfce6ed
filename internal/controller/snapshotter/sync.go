package snapshotter

import (
	"context"
	"errors"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/secrets"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/provisioning"
	"github.com/volplane/volplane/internal/snapshotting"
)

// sync reads the content, asks snapshotting.Decide, and takes the step.
func (c *Controller) sync(ctx context.Context, key string) (loop.Result, error) {
	content, err := c.contents.Get(key)
	if apierrors.IsNotFound(err) {
		c.waits.Done(key)
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), fmt.Errorf("content %s: %w", key, err)
	}
	content = c.newest.Newer(key, content)
	if !c.wanted(content) {
		return loop.Done(), nil
	}
	if snapshotting.ServedBy(content, c.cfg.NodeName) == snapshotting.ServeIfLocal {
		local, err := c.local(ctx, content)
		if err != nil {
			return loop.Done(), err
		}
		if !local {
			return loop.Done(), nil
		}
	}
	plan := snapshotting.Decide(content)
	klog.FromContext(ctx).V(4).Info("Content decided", "content", key, "step", plan.Step, "reason", plan.Reason,
		"deletionPending", plan.DeletionPending)
	res, err := c.take(ctx, content, plan)
	if err != nil {
		return res, err
	}
	if plan.DeletionPending && res == loop.Done() {
		// Not released yet, whatever the events (external-snapshotter#1446):
		// look again after a backoff.
		return loop.After(c.waits.Next(key, c.cfg.RetryStart, c.cfg.RetryMax)), nil
	}
	if res == loop.Done() {
		c.waits.Done(key)
	}
	return res, nil
}

// take runs the plan's step.
func (c *Controller) take(ctx context.Context, content *snapv1.VolumeSnapshotContent, plan snapshotting.Plan) (loop.Result, error) {
	switch plan.Step {
	case snapshotting.StepCreate:
		return c.create(ctx, content)
	case snapshotting.StepCheck:
		return c.check(ctx, content, plan.SnapshotID)
	case snapshotting.StepDelete:
		return c.delete(ctx, content, plan.SnapshotID)
	case snapshotting.StepRelease:
		return c.release(ctx, content)
	case snapshotting.StepClearCreating:
		if _, err := c.clearCreating(ctx, content); err != nil {
			return loop.Done(), err
		}
		return loop.Again(), nil
	}
	return loop.Done(), nil
}

// create takes (or re-asks for) a dynamic content's snapshot, the
// reference's createSnapshotWrapper: class and secret first, then the
// being-created annotation, the call, and on an answer the status before
// the annotation goes.
func (c *Controller) create(ctx context.Context, content *snapv1.VolumeSnapshotContent) (loop.Result, error) {
	class, err := c.class(content)
	if err != nil {
		return c.createFailed(ctx, content, fmt.Errorf("failed to get input parameters to create snapshot for content %s: %q", content.Name, err.Error()))
	}
	req, err := snapshotting.BuildCreate(content, class)
	if err != nil {
		return c.createFailed(ctx, content, err)
	}
	creds, err := c.callSecrets(ctx, content)
	if err != nil {
		return c.createFailed(ctx, content, fmt.Errorf("failed to get input parameters to create snapshot for content %s: %q", content.Name, err.Error()))
	}
	ep, err := c.sourceEndpoint(content)
	if err != nil {
		return c.createFailed(ctx, content, err)
	}
	if !snapshotting.Creating(content) {
		if content, err = c.setCreating(ctx, content); err != nil {
			return loop.Done(), fmt.Errorf("failed to add VolumeSnapshotBeingCreated annotation on the content %s: %w", content.Name, err)
		}
	}
	snap, callErr := ep.CreateSnapshot(ctx, &csipb.CreateSnapshotRequest{SourceVolumeId: req.SourceVolumeID, Name: req.Name,
		Parameters: req.Parameters, Secrets: creds})
	if callErr != nil {
		if snapshotting.CreateFinal(callErr) {
			if content, err = c.clearCreating(ctx, content); err != nil {
				return loop.Done(), fmt.Errorf("failed to remove VolumeSnapshotBeingCreated annotation from the content %s: %w", content.Name, err)
			}
		}
		return c.createFailed(ctx, content, snapshotting.CreateFailed(content, callErr))
	}
	c.cfg.Pool.RememberSnapshot(content.Spec.Driver, snap.GetSnapshotId(), ep)
	content, err = c.writeStatus(ctx, content, answerOf(snap))
	if err != nil {
		return loop.Done(), err
	}
	if _, err := c.clearCreating(ctx, content); err != nil {
		return loop.Done(), fmt.Errorf("failed to remove VolumeSnapshotBeingCreated annotation on the content %s: %w", content.Name, err)
	}
	if !snap.GetReadyToUse() {
		return loop.After(c.waits.Next(content.Name, c.cfg.RetryStart, c.cfg.RetryMax)), nil
	}
	return loop.Again(), nil
}

// createFailed records err as the content's status error and event
// (SnapshotCreationFailed) and returns it for a retry with backoff.
func (c *Controller) createFailed(ctx context.Context, content *snapv1.VolumeSnapshotContent, err error) (loop.Result, error) {
	c.failed(ctx, content, snapshotting.EventCreationFailed, snapshotting.MessageCreationFailed+err.Error())
	return loop.Done(), fmt.Errorf("create snapshot for content %s: %w", content.Name, err)
}

// check asks the driver whether a snapshot it did not take for this
// content (pre-provisioned, a group member) is ready: ListSnapshots, or
// ready at once when the driver cannot list.
func (c *Controller) check(ctx context.Context, content *snapv1.VolumeSnapshotContent, id string) (loop.Result, error) {
	creds, err := c.listSecrets(ctx, content)
	if err != nil {
		return c.checkFailed(ctx, content, err)
	}
	info, _ := c.cfg.Pool.Info(content.Spec.Driver)
	_, snap, err := c.cfg.Pool.FindSnapshot(ctx, content.Spec.Driver, id, creds)
	if (err == nil && snap == nil && info.ListSnapshots) || errors.Is(err, csi.ErrSnapshotNotFound) {
		err = fmt.Errorf("can not find snapshot for snapshotID %s", id)
	}
	if err != nil {
		return c.checkFailed(ctx, content, fmt.Errorf("failed to list snapshot for content %s: %q", content.Name, err.Error()))
	}
	a := snapshotting.Answer{ID: id, Ready: true}
	if snap != nil {
		a = answerOf(snap)
		a.ID = id
	}
	if _, err := c.writeStatus(ctx, content, a); err != nil {
		return loop.Done(), err
	}
	if !a.Ready {
		return loop.After(c.waits.Next(content.Name, c.cfg.RetryStart, c.cfg.RetryMax)), nil
	}
	return loop.Again(), nil
}

func (c *Controller) checkFailed(ctx context.Context, content *snapv1.VolumeSnapshotContent, err error) (loop.Result, error) {
	c.failed(ctx, content, snapshotting.EventCheckFailed, snapshotting.MessageCheckFailed+err.Error())
	return loop.Done(), fmt.Errorf("check snapshot of content %s: %w", content.Name, err)
}

// delete deletes the backend snapshot on the endpoint that holds it, then
// releases the content. Every endpoint saying it holds no such snapshot
// means there is nothing left to delete.
func (c *Controller) delete(ctx context.Context, content *snapv1.VolumeSnapshotContent, id string) (loop.Result, error) {
	driver := content.Spec.Driver
	creds, err := c.callSecrets(ctx, content)
	if err != nil {
		c.event(content, v1.EventTypeWarning, snapshotting.EventDeleteError, snapshotting.MessageNoCredentials)
		return loop.Done(), fmt.Errorf("failed to get input parameters to delete snapshot for content %s: %q", content.Name, err.Error())
	}
	ep, err := c.holder(ctx, content, id, creds)
	switch {
	case errors.Is(err, csi.ErrSnapshotNotFound):
		klog.FromContext(ctx).V(2).Info("No endpoint holds the snapshot any more", "content", content.Name, "snapshot", id)
	case err != nil:
		c.event(content, v1.EventTypeWarning, snapshotting.EventDeleteError, snapshotting.MessageDeleteFailed)
		return loop.Done(), fmt.Errorf("failed to delete snapshot %q, err: %w", content.Name, err)
	default:
		if err := ep.DeleteSnapshot(ctx, id, creds); err != nil && !csierror.NotFound(err) {
			c.event(content, v1.EventTypeWarning, snapshotting.EventDeleteError, snapshotting.MessageDeleteFailed)
			return loop.Done(), fmt.Errorf("failed to delete snapshot %q, err: %w", content.Name, err)
		}
	}
	c.cfg.Pool.RememberSnapshot(driver, id, nil)
	return c.release(ctx, content)
}

// holder is the endpoint that holds the content's snapshot: while its
// source volume's PV is known, the endpoint of that volume (a snapshot
// lives on its source volume's node; if that node's driver is not served,
// the delete waits rather than asking the others); else the one that lists
// it (csi.Pool.FindSnapshot).
func (c *Controller) holder(ctx context.Context, content *snapv1.VolumeSnapshotContent, id string, creds map[string]string) (*csi.Endpoint, error) {
	pv, err := c.sourcePV(content)
	if err != nil {
		return nil, err
	}
	if pv != nil && len(c.cfg.Pool.Endpoints(content.Spec.Driver)) > 1 {
		return c.cfg.Pool.ForVolume(content.Spec.Driver, pv)
	}
	ep, _, err := c.cfg.Pool.FindSnapshot(ctx, content.Spec.Driver, id, creds)
	return ep, err
}

// release drops the content's bound-protection finalizer.
func (c *Controller) release(ctx context.Context, content *snapv1.VolumeSnapshotContent) (loop.Result, error) {
	if err := c.dropFinalizer(ctx, content); err != nil {
		return loop.Done(), err
	}
	c.waits.Done(content.Name)
	return loop.Done(), nil
}

// class is the content's class from the cache; nil when it names none.
func (c *Controller) class(content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotClass, error) {
	if content.Spec.VolumeSnapshotClassName == nil {
		return nil, nil
	}
	return c.classes.Get(*content.Spec.VolumeSnapshotClassName)
}

// callSecrets is the data of the create and delete secret
// (snapshotting.CallSecret).
func (c *Controller) callSecrets(ctx context.Context, content *snapv1.VolumeSnapshotContent) (map[string]string, error) {
	ref, err := snapshotting.CallSecret(content)
	if err != nil || ref.None() {
		return nil, err
	}
	data, err := secrets.Read(ctx, c.cfg.Client, &v1.SecretReference{Namespace: ref.Namespace, Name: ref.Name})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to get credentials for snapshot", "content", content.Name)
		return nil, fmt.Errorf("cannot get credentials for snapshot content %q", content.Name)
	}
	return data, nil
}

// listSecrets is the data of the ListSnapshots secret: the class's list
// secret, or for a group member its call secret.
func (c *Controller) listSecrets(ctx context.Context, content *snapv1.VolumeSnapshotContent) (map[string]string, error) {
	if content.Status != nil && content.Status.VolumeGroupSnapshotHandle != nil {
		return c.callSecrets(ctx, content)
	}
	if content.Spec.VolumeSnapshotClassName == nil {
		return nil, nil
	}
	class, err := c.class(content)
	if err != nil {
		return nil, fmt.Errorf("failed to get snapshot class %s for snapshot content %s: %v", *content.Spec.VolumeSnapshotClassName, content.Name, err)
	}
	ref, err := snapshotting.ListSecret(class.Parameters, content.Name)
	if err != nil {
		return nil, fmt.Errorf("failed to get secret reference for snapshot content %s: %v", content.Name, err)
	}
	if ref.None() {
		return nil, nil
	}
	data, err := secrets.Read(ctx, c.cfg.Client, &v1.SecretReference{Namespace: ref.Namespace, Name: ref.Name})
	if err != nil {
		return nil, fmt.Errorf("failed to get credentials for snapshot content %s: %v", content.Name, err)
	}
	return data, nil
}

// sourceEndpoint is the endpoint that holds the content's source volume:
// the one endpoint of a central driver, else the one its PV's node
// affinity names.
func (c *Controller) sourceEndpoint(content *snapv1.VolumeSnapshotContent) (*csi.Endpoint, error) {
	driver := content.Spec.Driver
	eps := c.cfg.Pool.Endpoints(driver)
	if len(eps) == 1 {
		return eps[0], nil
	}
	pv, err := c.sourcePV(content)
	if err != nil {
		return nil, err
	}
	if pv == nil {
		return nil, fmt.Errorf("no PersistentVolume of driver %s has volume handle %s, so no endpoint can be told to hold it",
			driver, *content.Spec.Source.VolumeHandle)
	}
	return c.cfg.Pool.ForVolume(driver, pv)
}

// sourcePV is a PV of the content's driver and source volume handle from
// the shared index, as its driver sees it (provisioning.AsCSI: a migrated
// in-tree PV translated, its node affinity on the driver's topology keys,
// which is what Pool.ForVolume matches endpoints by); nil if none is
// cached.
func (c *Controller) sourcePV(content *snapv1.VolumeSnapshotContent) (*v1.PersistentVolume, error) {
	if content.Spec.Source.VolumeHandle == nil {
		return nil, nil
	}
	pvs, err := informerindex.PVsOf(c.pvs, attachment.UniqueVolumeName(content.Spec.Driver, *content.Spec.Source.VolumeHandle))
	if err != nil || len(pvs) == 0 {
		return nil, err
	}
	return provisioning.AsCSI(pvs[0])
}

// local says, in a node deployment, whether an unlabelled content is this
// node's: its source volume's PV is on this node's driver, or this node's
// driver lists its snapshot.
func (c *Controller) local(ctx context.Context, content *snapv1.VolumeSnapshotContent) (bool, error) {
	driver := content.Spec.Driver
	pv, err := c.sourcePV(content)
	if err != nil {
		return false, err
	}
	if pv != nil {
		_, err := c.cfg.Pool.ForVolume(driver, pv)
		return err == nil, nil
	}
	id := snapshotting.SnapshotID(content)
	if info, _ := c.cfg.Pool.Info(driver); id == "" || !info.ListSnapshots {
		return false, nil
	}
	_, snap, err := c.cfg.Pool.FindSnapshot(ctx, driver, id, nil)
	if err != nil && !errors.Is(err, csi.ErrSnapshotNotFound) {
		return false, err
	}
	return snap != nil, nil
}

// answerOf is the driver's snapshot in the core's terms.
func answerOf(s *csipb.Snapshot) snapshotting.Answer {
	a := snapshotting.Answer{ID: s.GetSnapshotId(), SizeBytes: s.GetSizeBytes(), Ready: s.GetReadyToUse(), GroupID: s.GetGroupSnapshotId()}
	if s.GetCreationTime() != nil {
		a.Created = s.GetCreationTime().AsTime()
	}
	return a
}
