package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"
	mount "k8s.io/mount-utils"

	"github.com/volplane/volplane/internal/mounting"
)

// unmountTimeout bounds the clean stop's unmounts.
const unmountTimeout = time.Minute

// nodesStoppedAtOnce is how many nodes unmount at once on stop: one after
// another, 1,000 simulated nodes with 10,000 pods did not finish within
// unmountTimeout and most of their calls failed on the deadline.
const nodesStoppedAtOnce = 16

// unmountAll carries out mounting.StopPlan on every node once the workers
// stopped (Config.UnmountOnStop), nodesStoppedAtOnce nodes at a time: the
// node services unpublish and unstage everything the node's disk records,
// and the records go. No API object is read or written but the PVs' names
// of stagings, from the informer.
func (a *Agent) unmountAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unmountTimeout)
	defer cancel()
	var (
		mu   sync.Mutex
		errs []error
		g    errgroup.Group
	)
	g.SetLimit(nodesStoppedAtOnce)
	for _, n := range a.nodes {
		g.Go(func() error {
			if err := a.unmountNode(ctx, n); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// unmountNode tears down what one node's disk records, then unmounts
// what the kernel still has mounted under the node's root.
func (a *Agent) unmountNode(ctx context.Context, n *nodeState) error {
	var errs []error
	if len(n.endpoints) < len(n.addresses) {
		// Stopped before Run dialed them all (a stop while starting): the
		// node services are still there to undo the mounts.
		if err := a.dial(ctx, n); err != nil {
			errs = append(errs, err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	disk, err := scan(n.layout)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("node %s: %w", n.name, err))...)
	}
	w := mounting.World{Node: n.name, Staged: disk.staged, Published: disk.published}
	a.nameStaged(&w)
	plan := mounting.StopPlan(w)
	if err := a.teardown(ctx, n, plan); err != nil {
		errs = append(errs, fmt.Errorf("node %s: unmount on stop: %w", n.name, err))
	}
	if err := unmountLeftovers(n.layout.Root); err != nil {
		errs = append(errs, fmt.Errorf("node %s: unmount on stop: %w", n.name, err))
	}
	if len(plan.Unpublish)+len(plan.Unstage) > 0 {
		klog.FromContext(ctx).Info("Unmounted the node's volumes on stop", "node", n.name, "publications", len(plan.Unpublish), "stagings", len(plan.Unstage))
	}
	return errors.Join(errs...)
}

// unmountLeftovers unmounts, deepest first, what the kernel still has
// mounted under root once the drivers undid their records
// (/proc/self/mountinfo): a mount a killed run left and the driver no
// longer records (it answers NotFound, so the record went while the mount
// stayed), or a mount stacked on another. A stopped up must leave its data
// dir removable. Without a mount table (not Linux) there is nothing to do.
func unmountLeftovers(root string) error {
	infos, err := mount.ParseMountInfo("/proc/self/mountinfo")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var left []string
	for _, m := range infos {
		if strings.HasPrefix(m.MountPoint, root+string(os.PathSeparator)) {
			left = append(left, m.MountPoint)
		}
	}
	// Deepest first; a path mounted twice is unmounted twice.
	slices.SortStableFunc(left, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range left {
		if err := syscall.Unmount(p, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
