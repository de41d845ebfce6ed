package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	mount "k8s.io/mount-utils"

	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/mounting"
)

// unmountTimeout bounds the clean stop's unmounts.
const unmountTimeout = time.Minute

// unmountAll carries out mounting.StopPlan on every node once the workers
// stopped (Config.UnmountOnStop): the node services unpublish and unstage
// everything the node's disk records, and the records go. No API object
// is read or written but the PVs' names of stagings, from the informer.
func (a *Agent) unmountAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unmountTimeout)
	defer cancel()
	logger := klog.FromContext(ctx)
	var errs []error
	for _, n := range a.nodes {
		if len(n.endpoints) < len(n.addresses) {
			// Stopped before Run dialed them all (a stop while
			// starting): the node services are still there to undo the
			// mounts.
			if err := a.dial(ctx, n); err != nil {
				errs = append(errs, err)
			}
		}
		n.mu.Lock()
		disk, err := scan(n.layout)
		if err != nil {
			n.mu.Unlock()
			errs = append(errs, fmt.Errorf("node %s: %w", n.name, err))
			continue
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
		n.mu.Unlock()
		if len(plan.Unpublish)+len(plan.Unstage) > 0 {
			logger.Info("Unmounted the node's volumes on stop", "node", n.name, "publications", len(plan.Unpublish), "stagings", len(plan.Unstage))
		}
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
