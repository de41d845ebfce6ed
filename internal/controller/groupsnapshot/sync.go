package groupsnapshot

import (
	"context"
	"fmt"
	"slices"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// syncGroup reads what DecideGroup needs from the caches, asks it and
// applies its one step. A step whose write returned the object asks for
// the group again at once (loop.Again), decided from that copy; a delete,
// or a create that found the object there, waits for the informer's event.
func (c *Controller) syncGroup(ctx context.Context, key string) (loop.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return loop.Done(), nil
	}
	cached, err := c.groups.VolumeGroupSnapshots(ns).Get(name)
	g, ok := c.own.groups.read(key, cached, err)
	if !ok {
		return loop.Done(), nil
	}
	f, err := c.facts(g)
	if err != nil {
		return loop.Done(), err
	}
	plan := grouping.DecideGroup(f)
	if plan.Step == grouping.RemoveFinalizer {
		// The group goes with this write: a content or a member the caches
		// have not seen (just made, or missed across a restart) would be
		// left behind with nothing to delete it. Decide again on live reads.
		if f, err = c.withLive(ctx, f); err != nil {
			return loop.Done(), err
		}
		plan = grouping.DecideGroup(f)
	}
	klog.FromContext(ctx).V(4).Info("Group snapshot step decided", "group", key, "step", plan.Step, "err", plan.Err)
	next, err := c.apply(ctx, g, plan)
	if err != nil {
		return loop.Done(), err
	}
	if plan.Err != nil {
		return loop.Done(), plan.Err
	}
	return next, nil
}

// facts reads the group's class, claims, volumes, content, snapshots and
// member contents from the caches.
func (c *Controller) facts(g *vgsv1.VolumeGroupSnapshot) (grouping.GroupFacts, error) {
	f := grouping.GroupFacts{Group: g, Now: c.now(), Volumes: map[string]*v1.PersistentVolume{},
		Snapshots: map[string]*snapv1.VolumeSnapshot{}, MemberContents: map[string]*snapv1.VolumeSnapshotContent{}}
	var err error
	if f.Classes, err = c.classes.List(labels.Everything()); err != nil {
		return f, err
	}
	if f.Claims, err = c.claims.PersistentVolumeClaims(g.Namespace).List(labels.Everything()); err != nil {
		return f, err
	}
	for _, claim := range f.Claims {
		if claim.Spec.VolumeName == "" {
			continue
		}
		if pv, err := c.pvs.Get(claim.Spec.VolumeName); err == nil {
			f.Volumes[pv.Name] = pv
		}
	}
	gc, err := c.contents.Get(grouping.ContentNameOf(g))
	if gc, ok := c.own.contents.read(grouping.ContentNameOf(g), gc, err); ok {
		f.Content = gc
	}
	snaps, err := c.snapshots.VolumeSnapshots(g.Namespace).List(labels.Everything())
	if err != nil {
		return f, err
	}
	for _, s := range snaps {
		f.Snapshots[s.Name], _ = c.own.members.read(grouping.Key(s.Namespace, s.Name), s, nil)
	}
	if f.Content != nil && f.Content.Status != nil {
		for _, info := range f.Content.Status.VolumeSnapshotInfoList {
			name := grouping.MemberContentName(g.UID, info.VolumeHandle)
			vsc, err := c.vscs.Get(name)
			if vsc, ok := c.own.memberContents.read(name, vsc, err); ok {
				f.MemberContents[name] = vsc
			}
			// A member just made, not in the cache yet.
			member := grouping.MemberSnapshotName(g.UID, info.VolumeHandle)
			if _, ok := f.Snapshots[member]; !ok {
				if vs, ok := c.own.members.Get(grouping.Key(g.Namespace, member)); ok {
					f.Snapshots[member] = vs
				}
			}
		}
	}
	return f, nil
}

// withLive is f with the group's content and its namespace's snapshots
// read from the API server: what the group's deletion must not miss.
func (c *Controller) withLive(ctx context.Context, f grouping.GroupFacts) (grouping.GroupFacts, error) {
	g := f.Group
	if f.Content == nil {
		live, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, grouping.ContentNameOf(g), metav1.GetOptions{})
		switch {
		case err == nil:
			f.Content = live
		case !apierrors.IsNotFound(err):
			return f, err
		}
	}
	list, err := c.snaps.SnapshotV1().VolumeSnapshots(g.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return f, err
	}
	f.Snapshots = make(map[string]*snapv1.VolumeSnapshot, len(list.Items))
	for i := range list.Items {
		f.Snapshots[list.Items[i].Name] = &list.Items[i]
	}
	return f, nil
}

// apply makes the plan's one write, then records its events, and says
// what follows: Again after a write whose copy the next decision reads
// (ownWrites), Done after a delete, a create that found the object there
// (the informer's event brings the group back) or no write.
func (c *Controller) apply(ctx context.Context, g *vgsv1.VolumeGroupSnapshot, p grouping.Plan) (loop.Result, error) {
	groups := c.snaps.GroupsnapshotV1().VolumeGroupSnapshots(g.Namespace)
	contents := c.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents()
	key := grouping.GroupKey(g)
	var (
		err   error
		wrote bool
	)
	wroteGroup := func(out *vgsv1.VolumeGroupSnapshot, e error) {
		if err = e; e == nil {
			c.own.groups.Wrote(key, out)
			wrote = true
		}
	}
	wroteContent := func(out *vgsv1.VolumeGroupSnapshotContent, e error) {
		if err = e; e == nil {
			c.own.contents.Wrote(out.Name, out)
			wrote = true
		}
	}
	wroteMember := func(out *snapv1.VolumeSnapshot, e error) {
		if err = e; e == nil {
			c.own.members.Wrote(grouping.Key(out.Namespace, out.Name), out)
			wrote = true
		}
	}
	wroteMemberContent := func(out *snapv1.VolumeSnapshotContent, e error) {
		if err = e; e == nil {
			c.own.memberContents.Wrote(out.Name, out)
			wrote = true
		}
	}
	switch p.Step {
	case grouping.Wait:
	case grouping.Fail, grouping.UpdateStatus:
		ng := g.DeepCopy()
		ng.Status = p.Status
		wroteGroup(groups.UpdateStatus(ctx, ng, metav1.UpdateOptions{}))
		if p.Step == grouping.Fail {
			// The event is recorded even when the status write fails, so
			// the user sees the error, as the reference does.
			c.record(g, p.Events)
			return loop.Done(), err
		}
	case grouping.SetClass:
		ng := g.DeepCopy()
		ng.Spec.VolumeGroupSnapshotClassName = &p.Class
		wroteGroup(groups.Update(ctx, ng, metav1.UpdateOptions{}))
	case grouping.AddFinalizer:
		ng := g.DeepCopy()
		ng.Finalizers = append(ng.Finalizers, snapshotapi.GroupBoundFinalizer)
		wroteGroup(groups.Update(ctx, ng, metav1.UpdateOptions{}))
	case grouping.RemoveFinalizer:
		ng := g.DeepCopy()
		ng.Finalizers = slices.DeleteFunc(ng.Finalizers, func(s string) bool { return s == snapshotapi.GroupBoundFinalizer })
		// The group goes with its finalizer: nothing follows.
		_, err = groups.Update(ctx, ng, metav1.UpdateOptions{})
	case grouping.CreateContent:
		wroteContent(contents.Create(ctx, p.Content, metav1.CreateOptions{}))
		if apierrors.IsAlreadyExists(err) {
			err = nil
		} else if err != nil {
			c.record(g, []grouping.Event{grouping.CreateContentFailed(g, err)})
			return loop.Done(), err
		}
		// Its finalizer is the content queue's: our write wakes nothing.
		c.contentQ.Add(p.Content.Name)
	case grouping.BindContent, grouping.MarkContent, grouping.AddContentFinalizer:
		wroteContent(contents.Update(ctx, p.Content, metav1.UpdateOptions{}))
		if err == nil && p.Step == grouping.BindContent {
			c.contentQ.Add(p.Content.Name)
		}
	case grouping.DeleteContent:
		err = contents.Delete(ctx, p.Content.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.Content.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			c.recorder.Event(g, v1.EventTypeWarning, "GroupSnapshotContentObjectDeleteError", "Failed to delete group snapshot content API object")
			return loop.Done(), fmt.Errorf("failed to delete VolumeGroupSnapshotContent %s from API server: %q", p.Content.Name, err)
		}
		err = nil
	case grouping.CreateMember:
		wroteMember(c.snaps.SnapshotV1().VolumeSnapshots(g.Namespace).Create(ctx, p.Snapshot, metav1.CreateOptions{}))
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	case grouping.CreateMemberContent:
		wroteMemberContent(c.snaps.SnapshotV1().VolumeSnapshotContents().Create(ctx, p.MemberContent, metav1.CreateOptions{}))
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	case grouping.SetMemberContentStatus:
		wroteMemberContent(c.snaps.SnapshotV1().VolumeSnapshotContents().UpdateStatus(ctx, p.MemberContent, metav1.UpdateOptions{}))
	case grouping.BindMember:
		wroteMember(c.snaps.SnapshotV1().VolumeSnapshots(g.Namespace).UpdateStatus(ctx, p.Snapshot, metav1.UpdateOptions{}))
	case grouping.DeleteMember:
		err = c.snaps.SnapshotV1().VolumeSnapshots(g.Namespace).Delete(ctx, p.Snapshot.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.Snapshot.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			msg := fmt.Sprintf("failed to delete snapshot API object %s/%s part of group snapshot %s: %v", g.Namespace, p.Snapshot.Name, key, err)
			c.recorder.Event(g, v1.EventTypeWarning, "SnapshotDeleteError", msg)
			return loop.Done(), fmt.Errorf("%s", msg)
		}
		err = nil
	default:
		return loop.Done(), fmt.Errorf("group snapshot %s: step %s is not the controller's", key, p.Step)
	}
	if err != nil {
		return loop.Done(), fmt.Errorf("group snapshot %s: %s: %w", key, p.Step, err)
	}
	c.record(g, p.Events)
	if wrote {
		return loop.Again(), nil
	}
	return loop.Done(), nil
}

func (c *Controller) record(obj runtime.Object, events []grouping.Event) {
	for _, e := range events {
		c.recorder.Event(obj, e.Type, e.Reason, e.Message)
	}
}

// syncContent adds a bound content's finalizer (DecideGroupContent).
func (c *Controller) syncContent(ctx context.Context, name string) (loop.Result, error) {
	cached, err := c.contents.Get(name)
	gc, ok := c.own.contents.read(name, cached, err)
	if !ok {
		return loop.Done(), nil
	}
	p := grouping.DecideGroupContent(gc)
	if c.bypassed.Has(gc.Spec.VolumeGroupSnapshotRef.UID) {
		if bp, ok := grouping.DecideBypassedContent(gc); ok {
			return c.applyBypassed(ctx, gc, bp)
		}
	}
	if p.Step == grouping.AddContentFinalizer {
		out, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Update(ctx, p.Content, metav1.UpdateOptions{})
		if err != nil {
			return loop.Done(), fmt.Errorf("group snapshot content %s: add finalizer: %w", name, err)
		}
		c.own.contents.Wrote(name, out)
	}
	c.record(gc, p.Events)
	return loop.Done(), p.Err
}

// applyBypassed takes the step for the content of a group deleted past its
// finalizer, after a live read says no group of that UID is there.
func (c *Controller) applyBypassed(ctx context.Context, gc *vgsv1.VolumeGroupSnapshotContent, p grouping.Plan) (loop.Result, error) {
	if p.Step == grouping.Wait {
		return loop.Done(), nil
	}
	r := gc.Spec.VolumeGroupSnapshotRef
	live, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshots(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	switch {
	case err == nil && live.UID == r.UID:
		c.bypassed.Remove(r.UID)
		return loop.Again(), nil
	case err != nil && !apierrors.IsNotFound(err):
		return loop.Done(), err
	}
	contents := c.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents()
	switch p.Step {
	case grouping.AddContentFinalizer, grouping.MarkContent:
		out, err := contents.Update(ctx, p.Content, metav1.UpdateOptions{})
		if err != nil {
			return loop.Done(), fmt.Errorf("group snapshot content %s of a group gone: %s: %w", gc.Name, p.Step, err)
		}
		c.own.contents.Wrote(out.Name, out)
		return loop.Again(), nil
	case grouping.DeleteContent:
		err := contents.Delete(ctx, gc.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &gc.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return loop.Done(), fmt.Errorf("group snapshot content %s of a group gone: delete: %w", gc.Name, err)
		}
	}
	return loop.Done(), nil
}
