package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"time"

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
		n.mu.Unlock()
		if len(plan.Unpublish)+len(plan.Unstage) > 0 {
			logger.Info("Unmounted the node's volumes on stop", "node", n.name, "publications", len(plan.Unpublish), "stagings", len(plan.Unstage))
		}
	}
	return errors.Join(errs...)
}
