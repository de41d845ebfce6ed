package snapshot

import (
	"context"
	"fmt"
	"slices"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/snapshotbinding"
)

// syncSnapshot reads one snapshot's facts, decides and applies.
func (c *Controller) syncSnapshot(ctx context.Context, key string) (loop.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return loop.Done(), nil
	}
	s, err := c.snapshots.VolumeSnapshots(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), err
	}
	if claim := ptr.Deref(s.Spec.Source.PersistentVolumeClaimName, ""); claim != "" {
		unlock, err := c.claimLocks.Lock(ctx, snapshotKey(ns, claim))
		if err != nil {
			return loop.Done(), err
		}
		defer unlock()
	}
	f, err := c.snapshotFacts(s)
	if err != nil {
		return loop.Done(), err
	}
	p := snapshotbinding.DecideSnapshot(f)
	if p.Claim == snapshotbinding.ClaimRemoveFinalizer || len(p.RemoveFinalizers) > 0 {
		// A content created just before (by this snapshot's last sync, or
		// a sibling's just before this sync took the claim's lock) may be
		// unseen by the cache: look before letting the claim or the
		// snapshot go.
		if f, err = c.withLiveContents(ctx, f); err != nil {
			return loop.Done(), err
		}
		if f.GroupLive, err = c.liveGroupLive(ctx, f); err != nil {
			return loop.Done(), err
		}
		if f.Claims, err = c.liveClaims(ctx, f); err != nil {
			return loop.Done(), err
		}
		p = snapshotbinding.DecideSnapshot(f)
	}
	klog.FromContext(ctx).V(4).Info("Snapshot decided", "snapshot", klog.KObj(s), "reason", p.Reason,
		"create", p.Create != nil, "bind", p.Bind != nil, "claim", p.Claim, "retry", p.Retry)
	if err := c.apply(ctx, s, f, p); err != nil {
		return loop.Done(), err
	}
	return loop.Done(), p.Retry
}

// snapshotFacts reads what DecideSnapshot needs from the caches.
func (c *Controller) snapshotFacts(s *snapv1.VolumeSnapshot) (snapshotbinding.SnapshotFacts, error) {
	f := snapshotbinding.SnapshotFacts{Now: c.clock.Now(), Snapshot: s}
	var err error
	if f.Content, err = c.content(snapshotbinding.Designated(s)); err != nil {
		return f, err
	}
	if f.Classes, err = c.classes.List(labels.Everything()); err != nil {
		return f, err
	}
	if claim := ptr.Deref(s.Spec.Source.PersistentVolumeClaimName, ""); claim != "" {
		// Only ever the snapshot's own namespace.
		if f.Claim, err = c.claim(s.Namespace, claim); err != nil {
			return f, err
		}
		if f.Claim != nil && f.Claim.Spec.VolumeName != "" {
			pv, err := c.pvs.Get(f.Claim.Spec.VolumeName)
			if err != nil && !apierrors.IsNotFound(err) {
				return f, err
			}
			if err == nil {
				f.Volume = pv
			}
			if f.ManagedBy, err = c.managedBy(f); err != nil {
				return f, err
			}
		}
		if f.Siblings, err = c.siblings(s, claim); err != nil {
			return f, err
		}
	}
	if s.DeletionTimestamp != nil {
		if f.Claims, err = c.claims.PersistentVolumeClaims(s.Namespace).List(labels.Everything()); err != nil {
			return f, err
		}
		if f.GroupLive, err = c.groupLive(s); err != nil {
			return f, err
		}
	}
	if f.Content != nil && f.Content.Status != nil && f.Content.Status.VolumeGroupSnapshotHandle != nil {
		f.GroupName, f.GroupMissing = c.groupOfHandle(s.Namespace, *f.Content.Status.VolumeGroupSnapshotHandle)
	}
	return f, nil
}

// content is the content of that name from the cache, nil if none.
func (c *Controller) content(name string) (*snapv1.VolumeSnapshotContent, error) {
	if name == "" {
		return nil, nil
	}
	content, err := c.contents.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return content, err
}

// claim is the claim from the cache, or the copy this loop last wrote if
// the cache has not caught up with it.
func (c *Controller) claim(ns, name string) (*corev1.PersistentVolumeClaim, error) {
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.newClaim.Newer(snapshotKey(ns, name), claim), nil
}

// withLiveContents reads from the API server the contents the cache has
// not seen: the snapshot's own designated one, and that of each sibling
// that would hold the claim once its content is seen
// (snapshotbinding.MayHold).
func (c *Controller) withLiveContents(ctx context.Context, f snapshotbinding.SnapshotFacts) (snapshotbinding.SnapshotFacts, error) {
	var err error
	if f.Content == nil {
		if f.Content, err = c.liveContent(ctx, snapshotbinding.Designated(f.Snapshot)); err != nil {
			return f, err
		}
	}
	siblings := slices.Clone(f.Siblings)
	for i, sib := range siblings {
		if sib.Content != nil || !snapshotbinding.MayHold(sib.Snapshot) {
			continue
		}
		if siblings[i].Content, err = c.liveContent(ctx, snapshotbinding.Designated(sib.Snapshot)); err != nil {
			return f, err
		}
	}
	f.Siblings = siblings
	return f, nil
}

// liveContent is the content of that name read from the API server, nil
// if none.
func (c *Controller) liveContent(ctx context.Context, name string) (*snapv1.VolumeSnapshotContent, error) {
	if name == "" {
		return nil, nil
	}
	live, err := c.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return live, err
}

// siblings are the namespace's other snapshots of the claim with their
// designated contents.
func (c *Controller) siblings(s *snapv1.VolumeSnapshot, claim string) ([]snapshotbinding.Sibling, error) {
	list, err := informerindex.SnapshotsOf(c.byClaim, s.Namespace, claim)
	if err != nil {
		return nil, err
	}
	var out []snapshotbinding.Sibling
	for _, o := range list {
		if o.UID == s.UID {
			continue
		}
		content, err := c.content(snapshotbinding.Designated(o))
		if err != nil {
			return nil, err
		}
		out = append(out, snapshotbinding.Sibling{Snapshot: o, Content: content})
	}
	return out, nil
}

// groupLive says the snapshot's group exists in its namespace and holds
// it (snapshotbinding.HeldBy: a namesake made since does not).
func (c *Controller) groupLive(s *snapv1.VolumeSnapshot) (bool, error) {
	name := snapshotbinding.GroupOf(s)
	if name == "" || c.groups == nil {
		return false, nil
	}
	g, err := c.groups.VolumeGroupSnapshots(s.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && snapshotbinding.HeldBy(s, g.Name, g.UID), err
}

// liveGroupLive is GroupLive for a member being deleted, read from the
// API server when the cache has no group: a group the cache has not seen
// (just made, or missed across a restart) still holds its member, whose
// in-group finalizer and content must not go under it.
func (c *Controller) liveGroupLive(ctx context.Context, f snapshotbinding.SnapshotFacts) (bool, error) {
	s := f.Snapshot
	name := snapshotbinding.GroupOf(s)
	if f.GroupLive || s.DeletionTimestamp == nil || name == "" || c.groups == nil {
		return f.GroupLive, nil
	}
	g, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshots(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && snapshotbinding.HeldBy(s, g.Name, g.UID), err
}

// liveClaims are the namespace's claims for a snapshot being deleted, read
// from the API server when the cache has none restoring from it: a claim
// made just before the deletion (unseen by the cache yet) still restores
// from the snapshot, whose content must not go under it (the reference
// reads its cache only, and lets it go). One list per deletion let go.
func (c *Controller) liveClaims(ctx context.Context, f snapshotbinding.SnapshotFacts) ([]*corev1.PersistentVolumeClaim, error) {
	s := f.Snapshot
	if s.DeletionTimestamp == nil || snapshotbinding.Restoring(s, f.Claims) != "" {
		return f.Claims, nil
	}
	list, err := c.client.CoreV1().PersistentVolumeClaims(s.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.PersistentVolumeClaim, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// groupOfHandle is the group (of the namespace) whose group content has
// that handle; missing if none.
func (c *Controller) groupOfHandle(ns, handle string) (string, bool) {
	if c.groupContents == nil {
		return "", true
	}
	list, err := c.groupContents.List(labels.Everything())
	if err != nil {
		return "", true
	}
	for _, g := range list {
		if g.Status != nil && ptr.Deref(g.Status.VolumeGroupSnapshotHandle, "") == handle && g.Spec.VolumeGroupSnapshotRef.Namespace == ns {
			return g.Spec.VolumeGroupSnapshotRef.Name, false
		}
	}
	return "", true
}

// syncContent reads one content and the snapshot it points at, decides
// and applies.
func (c *Controller) syncContent(ctx context.Context, name string) (loop.Result, error) {
	content, err := c.content(name)
	if err != nil || content == nil {
		return loop.Done(), err
	}
	f := snapshotbinding.ContentFacts{Content: content, SnapshotBypassed: c.bypassed.Has(content.Spec.VolumeSnapshotRef.UID)}
	if r := content.Spec.VolumeSnapshotRef; r.Namespace != "" && r.Name != "" {
		s, err := c.snapshots.VolumeSnapshots(r.Namespace).Get(r.Name)
		if err != nil && !apierrors.IsNotFound(err) {
			return loop.Done(), err
		}
		if err == nil {
			f.Snapshot = s
		}
	}
	p := snapshotbinding.DecideContent(f)
	if p.Delete {
		// The cache may not have seen a member snapshot made just before
		// its content (or a snapshot seen deleted past its finalizers may
		// be another of that name): decide again on a live read before
		// deleting.
		r := content.Spec.VolumeSnapshotRef
		live, err := c.snaps.SnapshotV1().VolumeSnapshots(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			f.Snapshot = live
		case !apierrors.IsNotFound(err):
			return loop.Done(), err
		}
		p = snapshotbinding.DecideContent(f)
	}
	klog.FromContext(ctx).V(4).Info("Content decided", "content", name, "reason", p.Reason)
	for _, e := range p.Events {
		c.recorder.Event(contentRef(content), e.Type, e.Reason, e.Message)
	}
	if p.AddFinalizer {
		if content, err = c.addContentFinalizer(ctx, content); err != nil {
			return loop.Done(), fmt.Errorf("content %s: add finalizer: %w", name, err)
		}
	}
	if p.MarkBeingDeleted {
		if err := c.markBeingDeleted(ctx, content); err != nil {
			return loop.Done(), fmt.Errorf("content %s: annotate being deleted: %w", name, err)
		}
	}
	if p.Delete {
		uid := content.UID
		err := c.snaps.SnapshotV1().VolumeSnapshotContents().Delete(ctx, content.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return loop.Done(), fmt.Errorf("content %s: delete the content of a member snapshot that is gone: %w", name, err)
		}
	}
	if p.RequeueSnapshot {
		c.snapQ.Add(snapshotKey(content.Spec.VolumeSnapshotRef.Namespace, content.Spec.VolumeSnapshotRef.Name))
	}
	return loop.Done(), nil
}

// managedBy is the node label of a content the snapshot may need created
// (snapshotbinding.ManagedBy); the nodes are read only then.
func (c *Controller) managedBy(f snapshotbinding.SnapshotFacts) (string, error) {
	if f.Content != nil || f.Volume == nil || f.Volume.Spec.NodeAffinity == nil {
		return "", nil
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return "", err
	}
	return snapshotbinding.ManagedBy(f.Volume, nodes), nil
}
