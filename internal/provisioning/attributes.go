package provisioning

import (
	"errors"
	"fmt"
	"maps"

	storagev1 "k8s.io/api/storage/v1"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/modification"
)

// ErrNoModify is the external-provisioner's text for a claim with a
// VolumeAttributesClass and a driver without MODIFY_VOLUME.
var ErrNoModify = errors.New("CSI driver does not support VolumeAttributesClass: controller MODIFY_VOLUME capability is not reported")

// ClassParameters are vac's parameters for a volume of driver.
func ClassParameters(vac *storagev1.VolumeAttributesClass, driver string) (map[string]string, error) {
	if vac.DriverName != driver {
		return nil, Final(fmt.Errorf("VAC %s referenced in PVC is for driver %s which does not match driver name %s", vac.Name, vac.DriverName, driver))
	}
	return maps.Clone(vac.Parameters), nil
}

// WithAttributesClass records the claim's attributes class on its new PV.
func WithAttributesClass(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) *v1.PersistentVolume {
	if name := modification.SpecClass(claim); name != "" {
		pv.Spec.VolumeAttributesClassName = &name
	}
	return pv
}
