package capacity

import (
	"context"
	"errors"
	"fmt"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	capacitycore "github.com/volplane/volplane/internal/capacity"
	"github.com/volplane/volplane/internal/controller/loop"
)

// sync publishes one driver's capacity, in the order doc.go states.
func (c *Controller) sync(ctx context.Context, driver string) (loop.Result, error) {
	logger := klog.FromContext(ctx).WithValues("driver", driver)
	items, classes, err := c.items(driver)
	if err != nil {
		return loop.Done(), err
	}
	c.cfg.Ledger.Prune(driver, items)
	askErr := c.ask(ctx, driver, items, classes)
	answers, inFlight := c.cfg.Ledger.Snapshot(driver, items)
	existing, err := c.existing()
	if err != nil {
		return loop.Done(), err
	}
	plan := capacitycore.Decide(capacitycore.Facts{
		Identity: capacitycore.Identity{Driver: driver, ManagedBy: c.managed, Namespace: c.cfg.Namespace, Owner: c.cfg.Owner},
		Items:    items, Answers: answers, InFlight: inFlight, Existing: existing,
	})
	if !plan.Empty() {
		logger.V(4).Info("Capacity sync", "create", len(plan.Create), "update", len(plan.Update), "delete", len(plan.Delete))
	}
	return loop.Done(), errors.Join(askErr, c.apply(ctx, plan))
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
// those of the CSINodes and Nodes.
func (c *Controller) segments(driver string) ([]capacitycore.Segment, error) {
	if c.cfg.NodeName != "" {
		for _, e := range c.cfg.Pool.Endpoints(driver) {
			if e.Info.NodeID == c.cfg.NodeName {
				return []capacitycore.Segment{capacitycore.SegmentOf(e.Info.Topology)}, nil
			}
		}
		return nil, nil
	}
	csiNodes, err := c.csiNodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return capacitycore.Segments(driver, csiNodes, nodes), nil
}

// ask calls GetCapacity for every item without an answer or on a stale
// segment that no CreateVolume is out on (inflight.Ledger.Busy), and
// records each answer in the ledger. Failed and busy segments stay stale:
// the retry, or the end of the create, asks again.
func (c *Controller) ask(ctx context.Context, driver string, items []capacitycore.Item, classes map[string]*storagev1.StorageClass) error {
	stale, all := c.stale(driver, time.Now())
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
	seen := map[string]bool{}
	out := make([]*storagev1.CSIStorageCapacity, 0, len(listed)+len(c.created))
	for _, o := range listed {
		seen[o.Name] = true
		delete(c.created, o.Name)
		out = append(out, c.written.Newer(o.Name, o))
	}
	for name, o := range c.created {
		if !seen[name] {
			out = append(out, o)
		}
	}
	return out, nil
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
		c.forget(d.Object.Name)
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
		c.mu.Lock()
		c.created[got.Name] = got
		c.mu.Unlock()
		c.written.Wrote(got.Name, got)
		logger.V(4).Info("Created CSIStorageCapacity", "name", got.Name, "class", got.StorageClassName, "capacity", got.Capacity)
	}
	return errors.Join(errs...)
}

func (c *Controller) forget(name string) {
	c.mu.Lock()
	delete(c.created, name)
	c.mu.Unlock()
	c.written.Forget(name)
}
