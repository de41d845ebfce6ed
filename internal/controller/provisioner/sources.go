package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/provisioning"
)

// Source protection (provisioning.SourceFinalizer): the provisioner's
// finalizer on the VolumeSnapshot a claim is restored from, or on the
// claim it is cloned from, while an attempt may be making the volume.
// Both are writes to a user's object: a merge patch carrying the UID and
// resourceVersion of the copy read live (a copy changed meanwhile
// conflicts and is read again), and only when the finalizer must change.
// protect and release are serialized in this process (sourceMu), so a
// release that finds no other claim holding the source cannot interleave
// with another claim's protect.

// protectSource puts the source finalizer on the claim's data source,
// before the first CreateVolume (the claim's marks are on already).
func (c *Controller) protectSource(ctx context.Context, claim *v1.PersistentVolumeClaim) error {
	kind, name, err := provisioning.ClaimSource(claim)
	if err != nil || kind == provisioning.NoSource {
		return nil
	}
	c.sourceMu.Lock()
	defer c.sourceMu.Unlock()
	obj, err := c.getSource(ctx, kind, claim.Namespace, name)
	if err != nil {
		return err
	}
	f := provisioning.SourceFinalizer(kind)
	if slices.Contains(obj.GetFinalizers(), f) {
		return nil
	}
	if err := c.patchFinalizers(ctx, kind, obj, append(slices.Clone(obj.GetFinalizers()), f)); err != nil {
		return fmt.Errorf("add finalizer %s to %s: %w", f, sourceText(kind, claim.Namespace, name), err)
	}
	klog.FromContext(ctx).V(2).Info("Protected the data source", "source", sourceText(kind, claim.Namespace, name), "finalizer", f)
	return nil
}

// releaseSource removes the source finalizer from the claim's data source
// unless another claim of its namespace is still being made from it
// (provisioning.SourceHeld). It runs before the claim's own marks go: a
// crash in between leaves the marks, and the next sync releases again. A
// source that is gone, or carries no finalizer of ours, needs nothing.
func (c *Controller) releaseSource(ctx context.Context, claim *v1.PersistentVolumeClaim) error {
	kind, name, err := provisioning.ClaimSource(claim)
	if err != nil || kind == provisioning.NoSource {
		return nil
	}
	return c.release(ctx, kind, claim.Namespace, name, claim.UID)
}

// release is releaseSource for the source kind ns/name, every claim but
// except counting as a holder.
func (c *Controller) release(ctx context.Context, kind provisioning.SourceKind, ns, name string, except types.UID) error {
	c.sourceMu.Lock()
	defer c.sourceMu.Unlock()
	if provisioning.SourceHeld(c.claimsIn(ns), kind, name, except) {
		return nil
	}
	obj, err := c.getSource(ctx, kind, ns, name)
	if apierrors.IsNotFound(err) || errorsIsNoAPI(err) {
		return nil
	}
	if err != nil {
		return err
	}
	f := provisioning.SourceFinalizer(kind)
	rest, had := binding.WithoutFinalizer(obj.GetFinalizers(), f)
	if !had {
		return nil
	}
	if err := c.patchFinalizers(ctx, kind, obj, rest); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer %s from %s: %w", f, sourceText(kind, ns, name), err)
	}
	klog.FromContext(ctx).V(2).Info("Released the data source", "source", sourceText(kind, ns, name), "finalizer", f)
	return nil
}

// claimsIn are the claims of ns, each the newest copy this process knows
// (its own writes may be ahead of the lister).
func (c *Controller) claimsIn(ns string) []*v1.PersistentVolumeClaim {
	claims, _ := c.read.claims.PersistentVolumeClaims(ns).List(labels.Everything())
	out := make([]*v1.PersistentVolumeClaim, len(claims))
	for i, cl := range claims {
		out[i] = c.memory.newClaim.Newer(binding.ClaimKey(cl), cl)
	}
	return out
}

// getSource reads the source live.
func (c *Controller) getSource(ctx context.Context, kind provisioning.SourceKind, ns, name string) (metav1.Object, error) {
	if kind == provisioning.CloneSource {
		return c.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if c.snapshots == nil {
		return nil, errNoSnapshotAPI
	}
	return c.snapshots.SnapshotV1().VolumeSnapshots(ns).Get(ctx, name, metav1.GetOptions{})
}

// patchFinalizers sets obj's finalizers, on the condition that obj is
// still the object (UID) and the version (resourceVersion) read.
func (c *Controller) patchFinalizers(ctx context.Context, kind provisioning.SourceKind, obj metav1.Object, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": obj.GetUID(), "resourceVersion": obj.GetResourceVersion(), "finalizers": finalizers}})
	if err != nil {
		return err
	}
	if kind == provisioning.CloneSource {
		out, err := c.client.CoreV1().PersistentVolumeClaims(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			c.memory.newClaim.Wrote(binding.ClaimKey(out), out)
		}
		return err
	}
	_, err = c.snapshots.SnapshotV1().VolumeSnapshots(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func errorsIsNoAPI(err error) bool { return errors.Is(err, errNoSnapshotAPI) }

func sourceText(kind provisioning.SourceKind, ns, name string) string {
	if kind == provisioning.CloneSource {
		return "claim " + ns + "/" + name
	}
	return "VolumeSnapshot " + ns + "/" + name
}

// sourceKey is the key of the sources queue: kind, namespace and name.
func sourceKey(kind provisioning.SourceKind, ns, name string) string {
	return fmt.Sprintf("%d/%s/%s", kind, ns, name)
}

// onSourceMaybeFree queues the claim's data source for a release check:
// the claim went away, or lost its in-progress marks, by another hand
// than this loop's (which releases before it drops them).
func (c *Controller) onSourceMaybeFree(claim *v1.PersistentVolumeClaim) {
	if kind, name, err := provisioning.ClaimSource(claim); err == nil && kind != provisioning.NoSource {
		c.queues.sources.Add(sourceKey(kind, claim.Namespace, name))
	}
}

// syncSource releases a source no claim is being made from any more.
func (c *Controller) syncSource(ctx context.Context, key string) (loop.Result, error) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return loop.Done(), nil
	}
	kind := provisioning.CloneSource
	if parts[0] == fmt.Sprint(int(provisioning.SnapshotSource)) {
		kind = provisioning.SnapshotSource
	}
	return loop.Done(), c.release(ctx, kind, parts[1], parts[2], "")
}
