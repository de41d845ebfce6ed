package groupsnapshot

import (
	"context"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/secrets"
	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// sync asks DecideContent for the content's next CSI step and applies it.
// A sync that wrote asks for the content again at once (loop.Again) and
// decides from its own write's copy (newest); the event of that write
// wakes nothing. A failure is retried with backoff, and a group the driver
// has not made ready is looked at again after a backoff: neither is
// hurried by the event of the status just written.
func (s *Sidecar) sync(ctx context.Context, name string) (loop.Result, error) {
	gc, err := s.contents.Get(name)
	if apierrors.IsNotFound(err) {
		s.waits.Done(name)
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), err
	}
	gc = s.newest.Newer(name, gc)
	if !s.pool.Serves(gc.Spec.Driver) {
		return loop.Done(), nil
	}
	var class *vgsv1.VolumeGroupSnapshotClass
	if n := gc.Spec.VolumeGroupSnapshotClassName; n != nil {
		if class, err = s.classes.Get(*n); err != nil && !apierrors.IsNotFound(err) {
			return loop.Done(), err
		}
	}
	if s.nodeName != "" {
		// Node deployment: every node's sidecar sees every content; it
		// takes only those its own endpoint holds (told by the content's
		// record or its volumes), and says nothing of the others.
		if _, known, err := s.locate(gc); err != nil || !known {
			klog.FromContext(ctx).V(5).Info("Group snapshot content not held by this node", "content", name, "node", s.nodeName, "err", err)
			return loop.Done(), nil
		}
	}
	now := s.now()
	p := grouping.DecideContent(gc, class, now)
	klog.FromContext(ctx).V(4).Info("Group snapshot content step decided", "content", name, "step", p.Step, "err", p.Err)
	contents := s.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents()
	switch p.Step {
	case grouping.Idle:
		s.record(gc, p.Events)
		return loop.Done(), p.Err
	case grouping.FailContent:
		return loop.Done(), s.writeStatus(ctx, gc, p.Status, p.Events, p.Err)
	case grouping.MarkCreating, grouping.Create:
		// The endpoint and the secret are checked before the mark: a group
		// no endpoint can take is refused without leaving a mark behind.
		// An existing mark stays (an earlier call may be running).
		ep, err := s.endpoint(gc)
		var data map[string]string
		if err == nil {
			data, err = secrets.Read(ctx, s.client, p.Secret)
		}
		if err != nil {
			r := grouping.CreateRefused(gc, err, now)
			return loop.Done(), s.writeStatus(ctx, gc, r.Status, r.Events, r.Err)
		}
		if p.Step == grouping.MarkCreating {
			n := gc.DeepCopy()
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[snapshotapi.GroupBeingCreated] = "yes"
			if len(ep.Info.Topology) > 0 {
				n.Annotations[grouping.EndpointAnnotation] = grouping.FormatSegment(ep.Info.Topology)
			}
			out, err := contents.Update(ctx, n, metav1.UpdateOptions{})
			if err != nil {
				return loop.Done(), err
			}
			// The call follows in this sync, on the marked copy: a sync
			// of its own would succeed and reset the key's backoff, so a
			// group the driver refuses for good (its volume gone) was
			// marked, asked and unmarked again at the base retry for ever.
			gc = s.newest.Wrote(name, out)
			if p = grouping.DecideContent(gc, class, now); p.Step != grouping.Create {
				return loop.Again(), nil
			}
		}
		p.Create.Secrets = data
		answer, callErr := ep.CreateVolumeGroupSnapshot(ctx, p.Create)
		st, events, unmark := grouping.AfterCreate(gc, answer, callErr, s.now())
		written, err := s.putStatus(ctx, gc, st)
		s.record(gc, events)
		if err != nil {
			return loop.Done(), fmt.Errorf("group snapshot content %s: status: %w", name, err)
		}
		if unmark {
			if err := s.unmark(ctx, written); err != nil {
				return loop.Done(), err
			}
		}
		if callErr != nil {
			return loop.Done(), callErr
		}
		return s.afterAnswer(name, answer.GetReadyToUse()), nil
	case grouping.Get:
		ep, err := s.endpoint(gc)
		if err != nil {
			return loop.Done(), err
		}
		data, err := secrets.Read(ctx, s.client, p.Secret)
		if err != nil {
			return loop.Done(), fmt.Errorf("failed to get credentials for group snapshot content %s: %w", name, err)
		}
		p.Get.Secrets = data
		answer, callErr := ep.GetVolumeGroupSnapshot(ctx, p.Get)
		st, events := grouping.AfterGet(gc, answer, callErr, s.now())
		if err := s.writeStatus(ctx, gc, st, events, callErr); err != nil {
			return loop.Done(), err
		}
		return s.afterAnswer(name, answer.GetReadyToUse()), nil
	case grouping.UnmarkCreating:
		if err := s.unmark(ctx, gc); err != nil {
			return loop.Done(), err
		}
		return loop.Again(), nil
	case grouping.Delete:
		if err := s.delete(ctx, gc, p.Delete, p.Secret); err != nil {
			return loop.Done(), err
		}
		// The content goes with its finalizer: its delete event ends it.
		return loop.Done(), s.removeFinalizer(ctx, name)
	case grouping.RemoveContentFinalizer:
		return loop.Done(), s.removeFinalizer(ctx, name)
	}
	return loop.Done(), fmt.Errorf("group snapshot content %s: step %s is not the sidecar's", name, p.Step)
}

// afterAnswer is what follows the driver's answer, written: the next step
// at once once the group is ready, else a look again after a backoff (a
// driver that makes groups ready later is not asked at the speed of our
// own writes).
func (s *Sidecar) afterAnswer(name string, ready bool) loop.Result {
	if !ready {
		return loop.After(s.waits.Next(name, s.retryStart, s.retryMax))
	}
	s.waits.Done(name)
	return loop.Again()
}

func (s *Sidecar) delete(ctx context.Context, gc *vgsv1.VolumeGroupSnapshotContent, req *csi.DeleteVolumeGroupSnapshotRequest, secret *v1.SecretReference) error {
	ep, err := s.endpoint(gc)
	if err == nil {
		req.Secrets, err = secrets.Read(ctx, s.client, secret)
		if err != nil {
			s.recorder.Event(gc, v1.EventTypeWarning, "GroupSnapshotDeleteError", "Failed to get snapshot credentials")
			return fmt.Errorf("cannot get credentials for group snapshot content %#v", gc.Name)
		}
		err = ep.DeleteVolumeGroupSnapshot(ctx, req)
	}
	if err != nil {
		e := grouping.DeleteFailed()
		s.recorder.Event(gc, e.Type, e.Reason, e.Message)
		return fmt.Errorf("failed to delete group snapshot %#v, err: %v", gc.Name, err)
	}
	return nil
}

// writeStatus writes the content's status and records the events; cause
// is returned for the runner's retry.
func (s *Sidecar) writeStatus(ctx context.Context, gc *vgsv1.VolumeGroupSnapshotContent, st *vgsv1.VolumeGroupSnapshotContentStatus, events []grouping.Event, cause error) error {
	_, err := s.putStatus(ctx, gc, st)
	s.record(gc, events)
	if err != nil {
		return fmt.Errorf("group snapshot content %s: status: %w", gc.Name, err)
	}
	return cause
}

// putStatus writes the content's status, unless it is unchanged or nil
// (no step clears a status: an empty one written back over an error
// erased it until the next backoff), and returns the content as written.
func (s *Sidecar) putStatus(ctx context.Context, gc *vgsv1.VolumeGroupSnapshotContent, st *vgsv1.VolumeGroupSnapshotContentStatus) (*vgsv1.VolumeGroupSnapshotContent, error) {
	if st == nil || equality.Semantic.DeepEqual(gc.Status, st) {
		return gc, nil
	}
	n := gc.DeepCopy()
	n.Status = st
	out, err := s.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return s.newest.Wrote(gc.Name, out), nil
}

func (s *Sidecar) unmark(ctx context.Context, gc *vgsv1.VolumeGroupSnapshotContent) error {
	if _, ok := gc.Annotations[snapshotapi.GroupBeingCreated]; !ok {
		return nil
	}
	n := gc.DeepCopy()
	delete(n.Annotations, snapshotapi.GroupBeingCreated)
	out, err := s.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Update(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("failed to remove VolumeGroupSnapshotBeingCreated annotation on the groupSnapshotContent %s: %q", gc.Name, err)
	}
	s.newest.Wrote(gc.Name, out)
	return nil
}

// removeFinalizer reads the content live (the delete call took time) and
// removes its finalizer.
func (s *Sidecar) removeFinalizer(ctx context.Context, name string) error {
	contents := s.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents()
	gc, err := contents.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !slices.Contains(gc.Finalizers, snapshotapi.GroupContentFinalizer) {
		return nil
	}
	gc.Finalizers = slices.DeleteFunc(gc.Finalizers, func(f string) bool { return f == snapshotapi.GroupContentFinalizer })
	out, err := contents.Update(ctx, gc, metav1.UpdateOptions{})
	if err == nil {
		s.newest.Wrote(name, out)
	}
	return err
}

func (s *Sidecar) record(gc *vgsv1.VolumeGroupSnapshotContent, events []grouping.Event) {
	for _, e := range events {
		s.recorder.Event(gc, e.Type, e.Reason, e.Message)
	}
}
