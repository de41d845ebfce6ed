package snapshotter

import (
	"context"
	"encoding/json"
	"fmt"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/snapshotting"
)

// setCreating adds the being-created annotation (merge patch).
func (c *Controller) setCreating(ctx context.Context, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotContent, error) {
	return c.patch(ctx, content, types.MergePatchType, map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{snapshotapi.BeingCreated: "yes"}}})
}

// clearCreating removes the being-created annotation, if there.
func (c *Controller) clearCreating(ctx context.Context, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotContent, error) {
	if !snapshotting.Creating(content) {
		return content, nil
	}
	return c.patch(ctx, content, types.MergePatchType, map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{snapshotapi.BeingCreated: nil}}})
}

// dropFinalizer removes snapshotapi.ContentFinalizer, with the
// resourceVersion read as a precondition: a list changed since is not
// overwritten (a conflict, retried).
func (c *Controller) dropFinalizer(ctx context.Context, content *snapv1.VolumeSnapshotContent) error {
	_, err := c.patch(ctx, content, types.MergePatchType, map[string]any{"metadata": map[string]any{
		"finalizers": snapshotting.WithoutFinalizer(content), "resourceVersion": content.ResourceVersion}})
	if err != nil {
		return fmt.Errorf("snapshot controller failed to update %s on API server: %w", content.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Removed protection finalizer from volume snapshot content", "content", content.Name)
	return nil
}

// writeStatus writes the status the answer makes (snapshotting.StatusFrom),
// if it changes anything.
func (c *Controller) writeStatus(ctx context.Context, content *snapv1.VolumeSnapshotContent, a snapshotting.Answer) (*snapv1.VolumeSnapshotContent, error) {
	st, changed := snapshotting.StatusFrom(content.Status, a, c.cfg.Clock.Now())
	if !changed {
		return content, nil
	}
	out, err := c.putStatus(ctx, content, st)
	if err != nil {
		return content, fmt.Errorf("error updating status for volume snapshot content %s: %w", content.Name, err)
	}
	return out, nil
}

// failed records message as the content's status error and, when it is
// new, as a warning event with reason, as the reference's
// updateContentErrorStatusWithEvent does (the event goes out even if the
// status write fails).
func (c *Controller) failed(ctx context.Context, content *snapv1.VolumeSnapshotContent, reason, message string) {
	st, changed := snapshotting.ErrorStatus(content.Status, message, c.cfg.Clock.Now())
	if !changed {
		return
	}
	if _, err := c.putStatus(ctx, content, st); err != nil {
		klog.FromContext(ctx).V(4).Info("Updating the content's error status failed", "content", content.Name, "err", err)
	}
	c.event(content, v1.EventTypeWarning, reason, message)
}

// putStatus replaces the status (a JSON patch "add" of /status through the
// status subresource).
func (c *Controller) putStatus(ctx context.Context, content *snapv1.VolumeSnapshotContent, st *snapv1.VolumeSnapshotContentStatus) (*snapv1.VolumeSnapshotContent, error) {
	return c.patch(ctx, content, types.JSONPatchType, []map[string]any{{"op": "add", "path": "/status", "value": st}}, "status")
}

func (c *Controller) patch(ctx context.Context, content *snapv1.VolumeSnapshotContent, pt types.PatchType, body any, sub ...string) (*snapv1.VolumeSnapshotContent, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return content, err
	}
	out, err := c.cfg.Snapshots.SnapshotV1().VolumeSnapshotContents().Patch(ctx, content.Name, pt, data, metav1.PatchOptions{}, sub...)
	if err != nil {
		return content, err
	}
	return c.newest.Wrote(out.Name, out), nil
}

// event records an event on the content. The reference is built here: the
// recorder's scheme does not know the snapshot API.
func (c *Controller) event(content *snapv1.VolumeSnapshotContent, eventType, reason, message string) {
	ref := &v1.ObjectReference{Kind: "VolumeSnapshotContent", APIVersion: snapshotapi.Group + "/v1", Name: content.Name,
		UID: content.UID, ResourceVersion: content.ResourceVersion}
	c.cfg.Recorder(content.Spec.Driver).Event(ref, eventType, reason, message)
}
