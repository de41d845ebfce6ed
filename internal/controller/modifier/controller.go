package modifier

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/modification"
)

// Controller is the modifier loop. Build it with New, start it with Run.
type Controller struct {
	*resizing.Base
	classes storagelisters.VolumeAttributesClassLister
	runner  *loop.Runner
}

// New builds the loop over the given informers.
func New(cfg Config) (*Controller, error) {
	base, err := resizing.NewBase(cfg, "modifier", "modifier-claims")
	if err != nil {
		return nil, err
	}
	c := &Controller{Base: base}
	classInf := c.Informers.Storage().V1().VolumeAttributesClasses()
	c.classes = classInf.Lister()
	synced, err := loop.Register(
		loop.Handler{Informer: c.ClaimInformer, Funcs: c.ClaimHandler(restless)},
		loop.Handler{Informer: c.PVInformer, Funcs: c.VolumeHandler(restless)},
		loop.Handler{Informer: classInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: c.onClass}})
	if err != nil {
		return nil, fmt.Errorf("modifier: %w", err)
	}
	c.runner = c.Runner("Modifier", synced, c.syncClaim, c.Resync(restless))
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx
// is done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error {
	return c.runner.Run(ctx, "drivers", c.Pool.Drivers())
}

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }

// restless says whether a claim may need a sync: Bound, and a class to
// reach or a modification's trace to clear.
func restless(claim *v1.PersistentVolumeClaim) bool {
	if claim.Status.Phase != v1.ClaimBound {
		return false
	}
	return !modification.AtRest(claim) || modification.Modifying(claim)
}

// onClass wakes the claims that wait for a class created late.
func (c *Controller) onClass(obj any) {
	class, ok := obj.(*storagev1.VolumeAttributesClass)
	if !ok {
		return
	}
	claims, _ := c.Claims.List(labels.Everything())
	for _, claim := range claims {
		if restless(claim) && (modification.SpecClass(claim) == class.Name || modification.TargetClass(claim) == class.Name) {
			c.Queue.Add(binding.ClaimKey(claim))
		}
	}
}
