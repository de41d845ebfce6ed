package provisioner

import (
	"errors"
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/modification"
)

// A claim naming a VolumeAttributesClass (spec.volumeAttributesClassName)
// gets that class's parameters as the CreateVolume request's mutable
// parameters, and its PV records the class, so that the binder matches the
// two. As the external-provisioner's prepareProvision: the driver must
// have MODIFY_VOLUME and the class must be for the driver (both final); a
// class that does not exist (yet) is an error retried with backoff, and
// its creation wakes the claims waiting for it.

// errNoModify is the external-provisioner's text for a claim with a
// VolumeAttributesClass and a driver without MODIFY_VOLUME.
var errNoModify = errors.New("CSI driver does not support VolumeAttributesClass: controller MODIFY_VOLUME capability is not reported")

// mutableParameters are the parameters of the claim's attributes class
// (nil without one), read through the lister.
func (c *Controller) mutableParameters(claim *v1.PersistentVolumeClaim, info csi.Info) (map[string]string, error) {
	name := modification.SpecClass(claim)
	if name == "" {
		return nil, nil
	}
	if !info.Modify {
		return nil, final(errNoModify)
	}
	vac, err := c.vacs.Get(name)
	if apierrors.IsNotFound(err) {
		// The reference GETs the class; say it as the API server would.
		return nil, apierrors.NewNotFound(storagev1.Resource("volumeattributesclasses"), name)
	}
	if err != nil {
		return nil, err
	}
	return classParameters(vac, info.Driver)
}

// classParameters are vac's parameters for a volume of driver.
func classParameters(vac *storagev1.VolumeAttributesClass, driver string) (map[string]string, error) {
	if vac.DriverName != driver {
		return nil, final(fmt.Errorf("VAC %s referenced in PVC is for driver %s which does not match driver name %s", vac.Name, vac.DriverName, driver))
	}
	return maps.Clone(vac.Parameters), nil
}

// withAttributesClass records the claim's attributes class on its new PV.
func withAttributesClass(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) *v1.PersistentVolume {
	if name := modification.SpecClass(claim); name != "" {
		pv.Spec.VolumeAttributesClassName = &name
	}
	return pv
}

// onAttributesClass wakes the claims that wait for a class created late.
func (c *Controller) onAttributesClass(obj any) {
	vac, ok := obj.(*storagev1.VolumeAttributesClass)
	if !ok {
		return
	}
	claims, _ := c.claims.List(labels.Everything())
	for _, claim := range claims {
		if modification.SpecClass(claim) == vac.Name && c.decide(claim).action == claimProvision {
			c.claimQ.Add(claimKey(claim.Namespace, claim.Name))
		}
	}
}

// attributesHandler is the handler of the VolumeAttributesClass informer.
func (c *Controller) attributesHandler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: c.onAttributesClass}
}
