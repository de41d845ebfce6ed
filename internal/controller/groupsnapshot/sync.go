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
// applies its one step.
func (c *Controller) syncGroup(ctx context.Context, key string) (loop.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return loop.Done(), nil
	}
	g, err := c.groups.VolumeGroupSnapshots(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), err
	}
	f, err := c.facts(g)
	if err != nil {
		return loop.Done(), err
	}
	plan := grouping.DecideGroup(f)
	klog.FromContext(ctx).V(4).Info("Group snapshot step decided", "group", key, "step", plan.Step, "err", plan.Err)
	if err := c.apply(ctx, g, plan); err != nil {
		return loop.Done(), err
	}
	return loop.Done(), plan.Err
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
	if gc, err := c.contents.Get(grouping.ContentNameOf(g)); err == nil {
		f.Content = gc
	} else if !apierrors.IsNotFound(err) {
		return f, err
	}
	snaps, err := c.snapshots.VolumeSnapshots(g.Namespace).List(labels.Everything())
	if err != nil {
		return f, err
	}
	for _, s := range snaps {
		f.Snapshots[s.Name] = s
	}
	if f.Content != nil && f.Content.Status != nil {
		for _, info := range f.Content.Status.VolumeSnapshotInfoList {
			name := grouping.MemberContentName(g.UID, info.VolumeHandle)
			if vsc, err := c.vscs.Get(name); err == nil {
				f.MemberContents[name] = vsc
			}
		}
	}
	return f, nil
}

// apply makes the plan's one write, then records its events.
func (c *Controller) apply(ctx context.Context, g *vgsv1.VolumeGroupSnapshot, p grouping.Plan) error {
	groups := c.snaps.GroupsnapshotV1().VolumeGroupSnapshots(g.Namespace)
	contents := c.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents()
	var err error
	switch p.Step {
	case grouping.Wait:
	case grouping.Fail, grouping.UpdateStatus:
		ng := g.DeepCopy()
		ng.Status = p.Status
		_, err = groups.UpdateStatus(ctx, ng, metav1.UpdateOptions{})
		if p.Step == grouping.Fail {
			// The event is recorded even when the status write fails, so
			// the user sees the error, as the reference does.
			c.record(g, p.Events)
			return err
		}
	case grouping.SetClass:
		ng := g.DeepCopy()
		ng.Spec.VolumeGroupSnapshotClassName = &p.Class
		_, err = groups.Update(ctx, ng, metav1.UpdateOptions{})
	case grouping.AddFinalizer:
		ng := g.DeepCopy()
		ng.Finalizers = append(ng.Finalizers, snapshotapi.GroupBoundFinalizer)
		_, err = groups.Update(ctx, ng, metav1.UpdateOptions{})
	case grouping.RemoveFinalizer:
		ng := g.DeepCopy()
		ng.Finalizers = slices.DeleteFunc(ng.Finalizers, func(s string) bool { return s == snapshotapi.GroupBoundFinalizer })
		_, err = groups.Update(ctx, ng, metav1.UpdateOptions{})
	case grouping.CreateContent:
		_, err = contents.Create(ctx, p.Content, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		} else if err != nil {
			c.record(g, []grouping.Event{grouping.CreateContentFailed(g, err)})
			return err
		}
	case grouping.BindContent, grouping.MarkContent:
		_, err = contents.Update(ctx, p.Content, metav1.UpdateOptions{})
	case grouping.DeleteContent:
		err = contents.Delete(ctx, p.Content.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.Content.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			c.recorder.Event(g, v1.EventTypeWarning, "GroupSnapshotContentObjectDeleteError", "Failed to delete group snapshot content API object")
			return fmt.Errorf("failed to delete VolumeGroupSnapshotContent %s from API server: %q", p.Content.Name, err)
		}
		err = nil
	case grouping.CreateMember:
		_, err = c.snaps.SnapshotV1().VolumeSnapshots(g.Namespace).Create(ctx, p.Snapshot, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	case grouping.CreateMemberContent:
		_, err = c.snaps.SnapshotV1().VolumeSnapshotContents().Create(ctx, p.MemberContent, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	case grouping.SetMemberContentStatus:
		_, err = c.snaps.SnapshotV1().VolumeSnapshotContents().UpdateStatus(ctx, p.MemberContent, metav1.UpdateOptions{})
	case grouping.BindMember:
		_, err = c.snaps.SnapshotV1().VolumeSnapshots(g.Namespace).UpdateStatus(ctx, p.Snapshot, metav1.UpdateOptions{})
	case grouping.DeleteMember:
		err = c.snaps.SnapshotV1().VolumeSnapshots(g.Namespace).Delete(ctx, p.Snapshot.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.Snapshot.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			msg := fmt.Sprintf("failed to delete snapshot API object %s/%s part of group snapshot %s: %v", g.Namespace, p.Snapshot.Name, grouping.GroupKey(g), err)
			c.recorder.Event(g, v1.EventTypeWarning, "SnapshotDeleteError", msg)
			return fmt.Errorf("%s", msg)
		}
		err = nil
	default:
		return fmt.Errorf("group snapshot %s: step %s is not the controller's", grouping.GroupKey(g), p.Step)
	}
	if err != nil {
		return fmt.Errorf("group snapshot %s: %s: %w", grouping.GroupKey(g), p.Step, err)
	}
	c.record(g, p.Events)
	return nil
}

func (c *Controller) record(obj runtime.Object, events []grouping.Event) {
	for _, e := range events {
		c.recorder.Event(obj, e.Type, e.Reason, e.Message)
	}
}

// syncContent adds a bound content's finalizer (DecideGroupContent).
func (c *Controller) syncContent(ctx context.Context, name string) (loop.Result, error) {
	gc, err := c.contents.Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), err
	}
	p := grouping.DecideGroupContent(gc)
	if p.Step == grouping.AddContentFinalizer {
		n := gc.DeepCopy()
		n.Finalizers = append(n.Finalizers, snapshotapi.GroupContentFinalizer)
		if _, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return loop.Done(), fmt.Errorf("group snapshot content %s: add finalizer: %w", name, err)
		}
	}
	c.record(gc, p.Events)
	return loop.Done(), p.Err
}
