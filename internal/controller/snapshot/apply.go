package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/snapshotbinding"
)

// apply writes the plan in doc.go's order, stopping at the first failure.
func (c *Controller) apply(ctx context.Context, s *snapv1.VolumeSnapshot, f snapshotbinding.SnapshotFacts, p snapshotbinding.Plan) error {
	logger := klog.FromContext(ctx)
	// 1. Class and finalizers added.
	if p.SetClass != "" || len(p.AddFinalizers) > 0 {
		upd := s.DeepCopy()
		if p.SetClass != "" {
			upd.Spec.VolumeSnapshotClassName = &p.SetClass
		}
		upd.Finalizers = append(upd.Finalizers, p.AddFinalizers...)
		got, err := c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			if len(p.AddFinalizers) > 0 {
				c.recorder.Event(ref(s), corev1.EventTypeWarning, "SnapshotFinalizerError", fmt.Sprintf("Failed to check and update snapshot: %s", err))
			}
			return fmt.Errorf("snapshot %s: update: %w", key(s), err)
		}
		s = got
	}
	// 2. The claim held.
	if p.Claim == snapshotbinding.ClaimAddFinalizer {
		if err := c.claimFinalizer(ctx, f.Claim, true); err != nil {
			return fmt.Errorf("snapshot %s: protect claim %s: %w", key(s), f.Claim.Name, err)
		}
	}
	// 3. The content bound or created.
	if p.Bind != nil {
		if err := c.bind(ctx, f.Content, p.Bind); err != nil {
			return fmt.Errorf("snapshot %s: bind content %s: %w", key(s), f.Content.Name, err)
		}
	}
	if p.Create != nil {
		_, err := c.snaps.SnapshotV1().VolumeSnapshotContents().Create(ctx, p.Create, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			c.recorder.Event(ref(s), corev1.EventTypeWarning, "CreateSnapshotContentFailed",
				fmt.Sprintf("Error creating volume snapshot content object for snapshot %s: %v.", key(s), err))
			return fmt.Errorf("snapshot %s: create content %s: %w", key(s), p.Create.Name, err)
		}
		logger.V(2).Info("Content created", "snapshot", klog.KObj(s), "content", p.Create.Name)
	}
	// 4. The content annotated, then deleted.
	if p.MarkBeingDeleted {
		if err := c.markBeingDeleted(ctx, f.Content); err != nil {
			return fmt.Errorf("snapshot %s: annotate content %s: %w", key(s), f.Content.Name, err)
		}
	}
	if p.DeleteContent {
		uid := f.Content.UID
		err := c.snaps.SnapshotV1().VolumeSnapshotContents().Delete(ctx, f.Content.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			c.recorder.Event(ref(s), corev1.EventTypeWarning, "SnapshotContentObjectDeleteError", "Failed to delete snapshot content API object")
			return fmt.Errorf("failed to delete VolumeSnapshotContent %s from API server: %q", f.Content.Name, err)
		}
		logger.V(2).Info("Content deleted", "snapshot", klog.KObj(s), "content", f.Content.Name)
	}
	// 5. The status.
	if p.Status != nil {
		upd := s.DeepCopy()
		upd.Status = p.Status
		got, err := c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("snapshot %s: status: %w", key(s), err)
		}
		s = got
	}
	// 6. The claim released (after the status: a snapshot that became
	// ready is seen ready one write sooner).
	if p.Claim == snapshotbinding.ClaimRemoveFinalizer {
		if err := c.claimFinalizer(ctx, f.Claim, false); err != nil {
			c.recorder.Event(ref(s), corev1.EventTypeWarning, "ErrorPVCFinalizer", "Error check and remove PVC Finalizer for VolumeSnapshot")
			return fmt.Errorf("snapshot %s: release claim %s: %w", key(s), f.Claim.Name, err)
		}
		logger.V(2).Info("Source claim released", "snapshot", klog.KObj(s), "pvc", f.Claim.Name)
	}
	// 7. Finalizers removed.
	if len(p.RemoveFinalizers) > 0 {
		upd := s.DeepCopy()
		upd.Finalizers = slices.DeleteFunc(upd.Finalizers, func(f string) bool { return slices.Contains(p.RemoveFinalizers, f) })
		if _, err := c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("snapshot %s: remove finalizers: %w", key(s), err)
		}
	}
	// 8. Events.
	for _, e := range p.Events {
		c.recorder.Event(ref(s), e.Type, e.Reason, e.Message)
	}
	return nil
}

func key(s *snapv1.VolumeSnapshot) string { return s.Namespace + "/" + s.Name }

// claimFinalizer adds or removes the claim's pvc-as-source-protection
// finalizer with the resourceVersion read (a conflict is retried).
func (c *Controller) claimFinalizer(ctx context.Context, claim *corev1.PersistentVolumeClaim, add bool) error {
	upd := claim.DeepCopy()
	if add {
		upd.Finalizers = append(upd.Finalizers, snapshotapi.ClaimFinalizer)
	} else {
		upd.Finalizers = slices.DeleteFunc(upd.Finalizers, func(f string) bool { return f == snapshotapi.ClaimFinalizer })
	}
	got, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	c.newClaim.Wrote(snapshotKey(got.Namespace, got.Name), got)
	return nil
}

// patch merge-patches a content, under the resourceVersion read when rv
// is set.
func (c *Controller) patch(ctx context.Context, name string, body map[string]any) (*snapv1.VolumeSnapshotContent, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return c.snaps.SnapshotV1().VolumeSnapshotContents().Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
}

// bind fills the pre-provisioned content's UID (and class) under the
// resourceVersion checked: a content changed since is not bound.
func (c *Controller) bind(ctx context.Context, content *snapv1.VolumeSnapshotContent, b *snapshotbinding.Bind) error {
	spec := map[string]any{"volumeSnapshotRef": map[string]any{"uid": b.UID}}
	if b.Class != nil {
		spec["volumeSnapshotClassName"] = *b.Class
	}
	_, err := c.patch(ctx, content.Name, map[string]any{
		"metadata": map[string]any{"resourceVersion": content.ResourceVersion}, "spec": spec})
	return err
}

func (c *Controller) addContentFinalizer(ctx context.Context, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotContent, error) {
	fins := append(slices.Clone(content.Finalizers), snapshotapi.ContentFinalizer)
	return c.patch(ctx, content.Name, map[string]any{
		"metadata": map[string]any{"resourceVersion": content.ResourceVersion, "finalizers": fins}})
}

func (c *Controller) markBeingDeleted(ctx context.Context, content *snapv1.VolumeSnapshotContent) error {
	_, err := c.patch(ctx, content.Name, map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{snapshotapi.BeingDeleted: "yes"}}})
	return err
}

// ref is the snapshot as events name it (the snapshot API is not in
// client-go's scheme, which the recorder would ask for the kind).
func ref(s *snapv1.VolumeSnapshot) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: snapshotapi.KindSnapshot, APIVersion: snapshotapi.Group + "/v1",
		Namespace: s.Namespace, Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion}
}

// contentRef is the content as events name it.
func contentRef(c *snapv1.VolumeSnapshotContent) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "VolumeSnapshotContent", APIVersion: snapshotapi.Group + "/v1",
		Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion}
}
