package provisioner

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/modification"
	"github.com/volplane/volplane/internal/provisioning"
)

// A claim naming a VolumeAttributesClass (spec.volumeAttributesClassName)
// gets that class's parameters as the CreateVolume request's mutable
// parameters, and its PV records the class, so that the binder matches the
// two. As the external-provisioner's prepareProvision: the driver must
// have MODIFY_VOLUME and the class must be for the driver (both final); a
// class that does not exist (yet) is an error retried with backoff, and
// its creation wakes the claims waiting for it.

// mutableParameters are the parameters of the claim's attributes class
// (nil without one), read through the lister.
func (c *Controller) mutableParameters(claim *v1.PersistentVolumeClaim, info csi.Info) (map[string]string, error) {
	name := modification.SpecClass(claim)
	if name == "" {
		return nil, nil
	}
	if !info.Modify {
		return nil, provisioning.Final(provisioning.ErrNoModify)
	}
	vac, err := c.read.vacs.Get(name)
	if apierrors.IsNotFound(err) {
		// The reference GETs the class; say it as the API server would.
		return nil, apierrors.NewNotFound(storagev1.Resource("volumeattributesclasses"), name)
	}
	if err != nil {
		return nil, err
	}
	return provisioning.ClassParameters(vac, info.Driver)
}

// onAttributesClass wakes the claims that wait for a class created late.
func (c *Controller) onAttributesClass(obj any) {
	vac, ok := obj.(*storagev1.VolumeAttributesClass)
	if !ok {
		return
	}
	claims, _ := c.read.claims.List(labels.Everything())
	for _, claim := range claims {
		if modification.SpecClass(claim) == vac.Name && c.decide(claim).action == provisioning.ClaimProvision {
			c.queues.claims.Add(binding.ClaimKey(claim))
		}
	}
}

// attributesHandler is the handler of the VolumeAttributesClass informer.
func (c *Controller) attributesHandler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: c.onAttributesClass}
}
