package provisioning

import (
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	csitranslation "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
)

// CSI migration on the provisioner's side, as the external-provisioner does
// it for a driver that an in-tree plugin migrated to: the binder hands the
// claims of that plugin's classes to the driver (binding.ExternalProvisioner);
// the class is read through TranslateInTreeStorageClassToCSI, and the PV is
// written back in the in-tree form (TranslateCSIPVToInTree) with the in-tree
// plugin as provisioned-by, so the cluster keeps seeing the volume it knows.
// Deleting such a PV translates it to CSI (TranslateInTreePVToCSI) for its
// handle.

// migratedFrom is the in-tree plugin the class names when that plugin is
// migrated to driver, "" otherwise (a class naming driver itself included).
func migratedFrom(class *storagev1.StorageClass, driver string) string {
	if class.Provisioner != driver && binding.MigratedDriver(class.Provisioner) == driver {
		return class.Provisioner
	}
	return ""
}

// ProvisionsFor says whether the class's claims are driver's to provision:
// it names the driver, or the in-tree plugin migrated to it.
func ProvisionsFor(class *storagev1.StorageClass, driver string) bool {
	return class.Provisioner == driver || migratedFrom(class, driver) != ""
}

// CSIClass is the class as driver sees it: a migrated in-tree class
// translated (parameters, zone parameters to allowedTopologies), any other
// as it is. The class from the lister is never modified.
func CSIClass(class *storagev1.StorageClass, driver string) (*storagev1.StorageClass, error) {
	if class == nil {
		return nil, nil
	}
	plugin := migratedFrom(class, driver)
	if plugin == "" {
		return class, nil
	}
	out, err := csitranslation.New().TranslateInTreeStorageClassToCSI(klog.TODO(), plugin, class)
	if err != nil {
		return class, fmt.Errorf("failed to translate storage class: %w", err)
	}
	return out, nil
}

// ProvisionedVolume is the PV for a volume made for claim: BuildVolume's,
// and for a migrated class its in-tree form.
func ProvisionedVolume(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string, vol *csipb.Volume, refs SecretRefs) (*v1.PersistentVolume, error) {
	pv := WithAttributesClass(BuildVolume(claim, class, driver, vol), claim)
	RecordSecrets(pv, refs)
	if migratedFrom(class, driver) == "" {
		return pv, nil
	}
	out, err := csitranslation.New().TranslateCSIPVToInTree(pv)
	if err != nil {
		return nil, fmt.Errorf("failed to translate CSI PV to in-tree: %w", err)
	}
	return out, nil
}

// OwnProvisioner says whether a provisioned-by value is ours: a driver we
// serve, or the in-tree plugin migrated to one.
func OwnProvisioner(provisionedBy string, serves func(string) bool) bool {
	if serves(provisionedBy) {
		return true
	}
	driver := binding.MigratedDriver(provisionedBy)
	return driver != "" && serves(driver)
}

// VolumeDriver is the driver we serve that owns the PV's backend volume,
// "" if none: a CSI PV that driver provisioned, or an in-tree PV made by the
// plugin migrated to it (the external-provisioner answers for that plugin's
// name too) whose source is that plugin's.
func VolumeDriver(pv *v1.PersistentVolume, serves func(string) bool) string {
	by := pv.Annotations[volumehelpers.AnnDynamicallyProvisioned]
	driver := by
	if pv.Spec.CSI == nil {
		plugin, err := csitranslation.New().GetInTreePluginNameFromSpec(pv, nil)
		if err != nil || plugin != by {
			return ""
		}
		driver = binding.MigratedDriver(by)
	} else if pv.Spec.CSI.Driver != by {
		return ""
	}
	if driver == "" || !serves(driver) {
		return ""
	}
	return driver
}

// AsCSI is the PV as its driver sees it: an in-tree PV translated, a CSI
// PV as it is. Name, UID and finalizers are kept.
func AsCSI(pv *v1.PersistentVolume) (*v1.PersistentVolume, error) {
	if pv.Spec.CSI != nil {
		return pv, nil
	}
	out, err := csitranslation.New().TranslateInTreePVToCSI(klog.TODO(), pv)
	if err != nil {
		return nil, fmt.Errorf("translate in-tree PV to CSI: %w", err)
	}
	return out, nil
}
