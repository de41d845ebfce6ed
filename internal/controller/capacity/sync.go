package capacity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	capacitycore "github.com/volplane/volplane/internal/capacity"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
)

// sync publishes one driver's capacity on all its segments (key: the
// driver) or on one (key: segmentKey), in the order doc.go states.
func (c *Controller) sync(ctx context.Context, key string) (loop.Result, error) {
	if driver, segment, one := strings.Cut(key, "/"); one {
		return c.syncSegment(ctx, driver, segment)
	}
	driver := key
	items, classes, err := c.items(driver)
	if err != nil {
		return loop.Done(), err
	}
	c.cfg.Ledger.Prune(driver, items)
	stale, all := c.stale(driver, time.Now())
	askErr := c.ask(ctx, driver, items, classes, stale, all)
	existing, err := c.existing()
	if err != nil {
		return loop.Done(), err
	}
	return loop.Done(), errors.Join(askErr, c.publish(ctx, driver, items, existing))
}

// syncSegment publishes one segment: only its items and its objects are
// read, so a node joining costs the classes of its segment, not every
// segment's. Its plan is the part of the driver's whole plan for that
// segment (a test in internal/capacity holds them equal).
func (c *Controller) syncSegment(ctx context.Context, driver, segment string) (loop.Result, error) {
	all, err := c.classes.List(labels.Everything())
	if err != nil {
		return loop.Done(), err
	}
	classes := capacitycore.Classes(driver, all, c.cfg.Immediate)
	byName := make(map[string]*storagev1.StorageClass, len(classes))
	names := make([]string, 0, len(classes))
	for _, cl := range classes {
		byName[cl.Name] = cl
		names = append(names, cl.Name)
	}
	var items []capacitycore.Item
	if seg, ok := c.segment(driver, segment); ok {
		items = capacitycore.Items([]capacitycore.Segment{seg}, classes)
	} else {
		c.cfg.Ledger.Forget(driver, segment, names)
	}
	askErr := c.ask(ctx, driver, items, byName, c.staleSegment(driver, segment), false)
	existing, err := c.existingIn(segmentKey(driver, segment))
	if err != nil {
		return loop.Done(), err
	}
	return loop.Done(), errors.Join(askErr, c.publish(ctx, driver, items, existing))
}

// publish decides the objects of items from the ledger and existing, and
// writes the plan.
func (c *Controller) publish(ctx context.Context, driver string, items []capacitycore.Item, existing []*storagev1.CSIStorageCapacity) error {
	logger := klog.FromContext(ctx).WithValues("driver", driver)
	answers, inFlight := c.cfg.Ledger.Snapshot(driver, items)
	plan := capacitycore.Decide(capacitycore.Facts{
		Identity: capacitycore.Identity{Driver: driver, ManagedBy: c.managed, Namespace: c.cfg.Namespace, Owner: c.cfg.Owner},
		Items:    items, Answers: answers, InFlight: inFlight, Existing: existing,
	})
	if !plan.Empty() {
		logger.V(4).Info("Capacity sync", "create", len(plan.Create), "update", len(plan.Update), "delete", len(plan.Delete))
	}
	return c.apply(ctx, plan)
}

// items are the driver's wanted objects, and its classes by name.
func (c *Controller) items(driver string) ([]capacitycore.Item, map[string]*storagev1.StorageClass, error) {
	all, err := c.classes.List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	classes := capacitycore.Classes(driver, all, c.cfg.Immediate)
	byName := make(map[string]*storagev1.StorageClass, len(classes))
	for _, cl := range classes {
		byName[cl.Name] = cl
	}
	segments, err := c.segments(driver)
	if err != nil {
		return nil, nil, err
	}
	return capacitycore.Items(segments, classes), byName, nil
}

// segments are the driver's: the node's own in node deployment, else
// those the Nodes and CSINodes give (members, the same as
// capacitycore.Segments over the caches).
func (c *Controller) segments(driver string) ([]capacitycore.Segment, error) {
	if c.cfg.NodeName != "" {
		for _, e := range c.cfg.Pool.Endpoints(driver) {
			if e.Info.NodeID == c.cfg.NodeName {
				return []capacitycore.Segment{capacitycore.SegmentOf(e.Info.Topology)}, nil
			}
		}
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members.Segments(driver), nil
}

// segment is the driver's segment of key, if it has it.
func (c *Controller) segment(driver, key string) (capacitycore.Segment, bool) {
	if c.cfg.NodeName != "" {
		segs, _ := c.segments(driver)
		for _, s := range segs {
			if s.Key() == key {
				return s, true
			}
		}
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members.Segment(driver, key)
}

// ask calls GetCapacity for every item without an answer or on a stale
// segment that no CreateVolume is out on (inflight.Ledger.Busy), and
// records each answer in the ledger. Failed and busy segments stay stale:
// the retry, or the end of the create, asks again.
func (c *Controller) ask(ctx context.Context, driver string, items []capacitycore.Item, classes map[string]*storagev1.StorageClass, stale map[string]bool, all bool) error {
	known, _ := c.cfg.Ledger.Snapshot(driver, items)
	var errs []error
	var failed, later []string
	for _, it := range items {
		seg := it.Segment.Key()
		if _, ok := known[it.Key()]; ok && !all && !stale[seg] {
			continue
		}
		if c.cfg.Ledger.Busy(driver, it.Segment) {
			// Asked once the create there is answered (Settle wakes us).
			later = append(later, seg)
			continue
		}
		if err := c.askOne(ctx, driver, it, classes[it.Class]); err != nil {
			errs, failed = append(errs, err), append(failed, seg)
		}
	}
	if len(failed)+len(later) > 0 {
		c.staleAgain(driver, append(failed, later...))
	}
	return errors.Join(errs...)
}

func (c *Controller) askOne(ctx context.Context, driver string, it capacitycore.Item, class *storagev1.StorageClass) error {
	e := c.cfg.Pool.ForSegment(driver, it.Segment.Labels())
	if e == nil {
		return fmt.Errorf("no endpoint of %s serves segment %q", driver, it.Segment.Key())
	}
	seq := c.cfg.Ledger.Asking()
	resp, err := e.GetCapacity(ctx, class.Parameters, it.Segment.Labels())
	if err != nil {
		return fmt.Errorf("CSI GetCapacity for class %s on segment %q: %w", it.Class, it.Segment.Key(), err)
	}
	a := capacitycore.Answer{Available: resp.GetAvailableCapacity()}
	if m := resp.GetMaximumVolumeSize(); m != nil {
		v := m.GetValue()
		a.Maximum = &v
	}
	c.cfg.Ledger.Answered(driver, it.Class, it.Segment, a, seq)
	return nil
}

// existing are the objects in the namespace, the newest copy of each
// (what this loop wrote may not be listed yet).
func (c *Controller) existing() ([]*storagev1.CSIStorageCapacity, error) {
	listed, err := c.list.CSIStorageCapacities(c.cfg.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newestLocked(listed, objectKey, slices.Collect(maps.Values(c.created))), nil
}

// existingIn are the objects of one segment (by work key), the newest copy
// of each.
func (c *Controller) existingIn(key string) ([]*storagev1.CSIStorageCapacity, error) {
	objs, err := c.bySeg.ByIndex(informerindex.SegmentOfCapacity, key)
	if err != nil {
		return nil, err
	}
	listed := make([]*storagev1.CSIStorageCapacity, 0, len(objs))
	for _, obj := range objs {
		if o, ok := obj.(*storagev1.CSIStorageCapacity); ok && o.Namespace == c.cfg.Namespace {
			listed = append(listed, o)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newestLocked(listed, func(*storagev1.CSIStorageCapacity) (string, bool) { return key, true },
		[]map[string]*storagev1.CSIStorageCapacity{c.created[key]}), nil
}

// newestLocked is the newest copy of each listed object (forgetting the
// created ones the cache now lists, by keyOf) and the created objects of
// created not listed yet. c.mu is held.
func (c *Controller) newestLocked(listed []*storagev1.CSIStorageCapacity, keyOf func(*storagev1.CSIStorageCapacity) (string, bool),
	created []map[string]*storagev1.CSIStorageCapacity) []*storagev1.CSIStorageCapacity {
	seen := map[string]bool{}
	out := make([]*storagev1.CSIStorageCapacity, 0, len(listed))
	for _, o := range listed {
		seen[o.Name] = true
		if k, ok := keyOf(o); ok {
			c.listedLocked(k, o.Name)
		}
		out = append(out, c.written.Newer(o.Name, o))
	}
	for _, byName := range created {
		for name, o := range byName {
			if !seen[name] {
				out = append(out, o)
			}
		}
	}
	return out
}

// listedLocked forgets a created object once the cache lists it.
func (c *Controller) listedLocked(key, name string) {
	if byName := c.created[key]; byName != nil {
		delete(byName, name)
		if len(byName) == 0 {
			delete(c.created, key)
		}
	}
}

// apply writes the plan: deletes, updates, creates.
func (c *Controller) apply(ctx context.Context, p capacitycore.Plan) error {
	logger := klog.FromContext(ctx)
	api := c.cfg.Client.StorageV1().CSIStorageCapacities(c.cfg.Namespace)
	var errs []error
	for _, d := range p.Delete {
		err := api.Delete(ctx, d.Object.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &d.Object.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete CSIStorageCapacity %s: %w", d.Object.Name, err))
			continue
		}
		c.forget(d.Object)
		logger.V(2).Info("Deleted CSIStorageCapacity", "name", d.Object.Name, "class", d.Object.StorageClassName, "reason", d.Reason)
	}
	for _, u := range p.Update {
		got, err := api.Update(ctx, u, metav1.UpdateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("update CSIStorageCapacity %s: %w", u.Name, err))
			continue
		}
		c.written.Wrote(got.Name, got)
		logger.V(4).Info("Updated CSIStorageCapacity", "name", got.Name, "class", got.StorageClassName, "capacity", got.Capacity)
	}
	for _, n := range p.Create {
		got, err := api.Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("create CSIStorageCapacity for class %s: %w", n.StorageClassName, err))
			continue
		}
		if k, ok := objectKey(got); ok {
			c.mu.Lock()
			if c.created[k] == nil {
				c.created[k] = map[string]*storagev1.CSIStorageCapacity{}
			}
			c.created[k][got.Name] = got
			c.mu.Unlock()
		}
		c.written.Wrote(got.Name, got)
		logger.V(4).Info("Created CSIStorageCapacity", "name", got.Name, "class", got.StorageClassName, "capacity", got.Capacity)
	}
	return errors.Join(errs...)
}

func (c *Controller) forget(o *storagev1.CSIStorageCapacity) {
	if k, ok := objectKey(o); ok {
		c.mu.Lock()
		c.listedLocked(k, o.Name)
		c.mu.Unlock()
	}
	c.written.Forget(o.Name)
}
