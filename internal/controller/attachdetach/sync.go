package attachdetach

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/protection"
)

// syncNode is one node's reconcile: read, decide, apply, over the volumes
// the events since its last sync named (pending), or over all. What a
// plan asks to see again (an unmount wait that ends, a deferred status
// patch) is noted for a later sync; a failed apply gives its volumes back
// and the runner's backoff retries.
func (c *Controller) syncNode(ctx context.Context, name string) (loop.Result, error) {
	scope, due := c.take(name)
	if !due {
		return loop.Done(), nil
	}
	logger := klog.FromContext(ctx).WithValues("node", klog.KRef("", name))
	ctx = klog.NewContext(ctx, logger)
	f, err := c.facts(name, scope)
	if err != nil {
		c.giveBack(name, scope)
		return loop.Done(), err
	}
	if f.InTreeElsewhere != nil {
		// The node's pods use in-tree volumes, which no attachment
		// reserves: read who holds them again under inTreeMu, and keep it
		// until this sync's status patch is made (see inTreeMu).
		c.inTreeMu.Lock()
		defer c.inTreeMu.Unlock()
		c.inTreeElsewhere(&f)
		c.readUsers(&f)
	}
	plan := attachment.Decide(f)
	for _, w := range plan.Wait {
		logger.V(4).Info("Attachment waits", "pv", w.Volume, "pod", klog.KObj(w.Pod), "reason", w.Reason.String(), "detail", w.Detail)
	}
	c.remember(name, f.Node, plan)
	if err := c.apply(ctx, name, f, plan); err != nil {
		c.giveBack(name, f.Scope)
		return loop.Done(), err
	}
	if plan.RequeueAfter > 0 {
		c.note(name, plan.Requeue)
	}
	return loop.After(plan.RequeueAfter), nil
}

// facts reads everything the node's decision rests on from the caches:
// about the scope's volumes, or (scope nil) about all of the node's.
func (c *Controller) facts(name string, scope map[v1.UniqueVolumeName]bool) (attachment.Facts, error) {
	node, err := c.nodes.Get(name)
	switch {
	case err == nil:
		node = c.newestNode.Newer(name, node)
	case !apierrors.IsNotFound(err):
		return attachment.Facts{}, fmt.Errorf("node %s: %w", name, err)
	}
	c.mu.Lock()
	f := attachment.Facts{
		Node:              attachment.NodeOf(name, node, c.lastInUse[name]),
		UndesiredSince:    maps.Clone(c.timers[name]),
		Now:               c.clock.Now(),
		MaxWaitForUnmount: c.maxWaitForUnmount,
		Status:            c.pace[name],
		StatusInterval:    c.statusInterval,
		Claims:            map[string]*v1.PersistentVolumeClaim{},
		Volumes:           map[string]*v1.PersistentVolume{},
		Drivers:           map[string]*storagev1.CSIDriver{},
		Users:             map[string][]*v1.Pod{},
	}
	c.mu.Unlock()
	if f.Node.Exists && !f.Node.Managed {
		return f, nil // not ours: nothing more to read
	}
	seen := map[string]bool{}
	add := func(va *storagev1.VolumeAttachment) {
		if !seen[va.Name] {
			seen[va.Name] = true
			f.Attachments = append(f.Attachments, va)
		}
	}
	if scope != nil && c.readScope(&f, scope, add) {
		c.readUsers(&f)
		return f, nil
	}
	f.Pods, f.Attachments, seen = nil, nil, map[string]bool{}
	pods, err := informerindex.PodsOn(c.pods, name)
	if err != nil {
		return attachment.Facts{}, err
	}
	for _, pod := range pods {
		f.Pods = append(f.Pods, pod)
		c.readVolumes(&f, pod)
		c.readInline(&f, pod, add)
	}
	here, err := informerindex.AttachmentsOn(c.vas, name)
	if err != nil {
		return attachment.Facts{}, err
	}
	for _, va := range here {
		add(va)
		c.readVolume(&f, va.Spec.Source.PersistentVolumeName)
	}
	// Every PV naming a volume the node's PVs name: an attachment made
	// through any of them holds the volume (a PV made again for a retained
	// disk, or adopted, names a volume another PV may hold attached).
	for _, pv := range slices.Collect(maps.Values(f.Volumes)) {
		for _, same := range c.sameVolume(pv) {
			c.readVolume(&f, &same.Name)
		}
	}
	for pv := range f.Volumes {
		for _, va := range c.attachmentsOf(pv) {
			add(va)
		}
	}
	c.inTreeElsewhere(&f)
	c.readUsers(&f)
	return f, nil
}

// readScope reads what a decision about the scope's volumes rests on
// (attachment.Facts.Scope): each one's PVs, the node's pods using them
// and those pods' claims and volumes, their attachments on any node, and
// their attachment on this node by name (whichever PV, if any, it names).
// false, with nothing decided on, when a volume is also some pod of the
// node's inline volume: the whole node is read then (inline attachments
// are found by a scan, readInline).
func (c *Controller) readScope(f *attachment.Facts, scope map[v1.UniqueVolumeName]bool, add func(*storagev1.VolumeAttachment)) bool {
	f.Scope = scope
	onNode := func(pods []*v1.Pod) (out []*v1.Pod) {
		for _, pod := range pods {
			if pod.Spec.NodeName == f.Node.Name {
				out = append(out, pod)
			}
		}
		return out
	}
	for u := range scope {
		if inline, _ := informerindex.PodsWithInline(c.pods, u); len(onNode(inline)) > 0 {
			f.Scope = nil
			return false
		}
		for _, pv := range c.volumesNamed(u) {
			c.readVolume(f, &pv.Name)
			for _, va := range c.attachmentsOf(pv.Name) {
				add(va)
			}
			if ref := pv.Spec.ClaimRef; ref != nil {
				users, _ := informerindex.PodsUsing(c.pods, binding.ClaimRefKey(ref)) // registered in New: cannot fail
				for _, pod := range onNode(users) {
					if !slices.Contains(f.Pods, pod) {
						f.Pods = append(f.Pods, pod)
						c.readVolumes(f, pod)
					}
				}
			}
		}
		if driver, handle, ok := attachment.SplitUnique(u); ok {
			if obj, ok, _ := c.vas.GetByKey(attachment.Name(handle, driver, f.Node.Name)); ok {
				if va, ok := obj.(*storagev1.VolumeAttachment); ok {
					add(va)
					c.readVolume(f, va.Spec.Source.PersistentVolumeName)
				}
			}
		}
	}
	return true
}

// readUsers adds the pods that use each PersistentVolume, which the
// decision reads only to name the pods holding a volume on another node
// (the Multi-Attach event): so only when another node holds one, through
// an attachment or its volumesAttached. Most syncs then read none.
func (c *Controller) readUsers(f *attachment.Facts) {
	elsewhere := len(f.InTreeElsewhere) > 0 || slices.ContainsFunc(f.Attachments, func(va *storagev1.VolumeAttachment) bool {
		return va.Spec.NodeName != f.Node.Name
	})
	if !elsewhere {
		return
	}
	for name, pv := range f.Volumes {
		if ref := pv.Spec.ClaimRef; ref != nil {
			// The index is registered in New; a lookup cannot fail.
			users, _ := informerindex.PodsUsing(c.pods, binding.ClaimRefKey(ref))
			f.Users[name] = users
		}
	}
}

// readVolumes adds a pod's claims, their volumes, drivers and users.
func (c *Controller) readVolumes(f *attachment.Facts, pod *v1.Pod) {
	for _, key := range protection.ClaimKeys(pod) {
		if _, done := f.Claims[key]; done {
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
		if err != nil {
			continue // not in the cache: the decision waits for it
		}
		f.Claims[key] = claim
		c.readVolume(f, &claim.Spec.VolumeName)
	}
}

// readVolume adds a PersistentVolume and its driver.
func (c *Controller) readVolume(f *attachment.Facts, name *string) {
	if name == nil || *name == "" {
		return
	}
	if _, done := f.Volumes[*name]; done {
		return
	}
	pv, err := c.pvs.Get(*name)
	if err != nil {
		return
	}
	f.Volumes[pv.Name] = pv
	if v, ok, _ := attachment.FromPV(pv); ok && v.Driver != "" {
		if d, err := c.drivers.Get(v.Driver); err == nil {
			f.Drivers[d.Name] = d
		}
	}
}

// remember keeps the unmount timers of the plan, and forgets a deleted
// node once nothing is attached to it any more.
func (c *Controller) remember(name string, node attachment.Node, plan attachment.Plan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(plan.UndesiredSince) == 0 {
		delete(c.timers, name)
	} else {
		c.timers[name] = plan.UndesiredSince
	}
	if plan.StatusDeferred {
		c.pace[name] = c.pace[name].Deferred()
	}
	if node.Exists {
		return // lastInUse is only ever set after the node's delete event
	}
	if vas, err := informerindex.AttachmentsOn(c.vas, name); err == nil && len(vas) == 0 {
		delete(c.lastInUse, name)
		delete(c.reported, name)
		delete(c.pace, name)
	}
}
