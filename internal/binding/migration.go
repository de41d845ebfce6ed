package binding

import (
	"errors"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	csitranslation "k8s.io/csi-translation-lib"
)

// CSI migration, as kube-controller-manager v1.36 does it. In 1.36 every
// in-tree plugin that csi-translation-lib knows (aws-ebs, gce-pd,
// azure-disk, azure-file, cinder, vsphere-volume, portworx-volume) is
// migrated, always (pkg/volume/csimigration: IsMigrationEnabledForPlugin):
// its claims are provisioned by its CSI driver, its PVs deleted by it.

// Finalizers of dynamically provisioned PVs (HonorPVReclaimPolicy, GA).
const (
	// InTreeFinalizer protects a PV of an in-tree plugin that is not
	// migrated while its policy is Delete.
	InTreeFinalizer = storagehelpers.PVDeletionInTreeProtectionFinalizer
	// ExternalFinalizer is the external provisioner's; the binder only
	// removes it, from PVs of an in-tree plugin that is not migrated.
	ExternalFinalizer = storagehelpers.PVDeletionProtectionFinalizer
)

const inTreePrefix = "kubernetes.io/"

// MigratedDriver is the CSI driver an in-tree plugin is migrated to, "" for
// a name that is not a migrated in-tree plugin (a CSI driver's included).
func MigratedDriver(plugin string) string {
	driver, err := csitranslation.New().GetCSINameFromInTreeName(plugin)
	if err != nil {
		return ""
	}
	return driver
}

// ExternalProvisioner is who provisions for the class, as
// findProvisionablePlugin and provisionClaimOperationExternal decide: the
// CSI driver of a migrated in-tree plugin, the class's provisioner when it
// is external. Any other "kubernetes.io/" name (kubernetes.io/no-provisioner
// included) fails the way the reference fails when no volume plugin has that
// name: volplane has no in-tree plugins.
func ExternalProvisioner(class *storagev1.StorageClass) (string, error) {
	if driver := MigratedDriver(class.Provisioner); driver != "" {
		return driver, nil
	}
	if strings.HasPrefix(class.Provisioner, inTreePrefix) {
		return "", errors.New("no volume plugin matched name: " + class.Provisioner)
	}
	return class.Provisioner, nil
}

// ClaimMigration keeps a claim's migrated-to annotation in step with its
// provisioner annotation (updateClaimMigrationAnnotations, run first in
// every claim sync): set to the CSI driver when the provisioner is a
// migrated in-tree plugin, removed otherwise. Nil when nothing changes.
func ClaimMigration(claim *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	want, change := migratedTo(claim.Annotations, true)
	if !change {
		return nil
	}
	out := claim.DeepCopy()
	setMigratedTo(out.Annotations, want)
	return out
}

// VolumeMigration is updateVolumeMigrationAnnotationsAndFinalizers, run
// first in every volume sync: migrated-to follows provisioned-by as on
// claims, and the deletion finalizers follow the plugin and the policy
// (deletionFinalizers). Both changes travel in one Update; nil when nothing
// changes. Statically provisioned PVs are left alone.
func VolumeMigration(pv *v1.PersistentVolume) *v1.PersistentVolume {
	want, annotate := migratedTo(pv.Annotations, false)
	finalizers, refinalize := deletionFinalizers(pv)
	if !annotate && !refinalize {
		return nil
	}
	out := pv.DeepCopy()
	if annotate {
		setMigratedTo(out.Annotations, want)
	}
	if refinalize {
		out.Finalizers = finalizers
	}
	return out
}

// migratedTo decides migrated-to as updateMigrationAnnotations does: the
// provisioner is read from provisioned-by (a PV) or storage-provisioner,
// else its beta (a claim); without one nothing changes. want is the value
// to hold, "" for none; change says whether ann holds something else.
func migratedTo(ann map[string]string, claim bool) (want string, change bool) {
	key := storagehelpers.AnnDynamicallyProvisioned
	if claim {
		key = storagehelpers.AnnStorageProvisioner
	}
	provisioner, ok := ann[key]
	if !ok && claim {
		provisioner, ok = ann[storagehelpers.AnnBetaStorageProvisioner]
	}
	if !ok {
		return "", false
	}
	have, has := ann[storagehelpers.AnnMigratedTo]
	want = MigratedDriver(provisioner)
	if want == "" {
		return "", has && have != "" // an empty value is left, as the reference leaves it
	}
	return want, have != want
}

// setMigratedTo writes migratedTo's decision into ann (never nil here: the
// decision to change came from an annotation).
func setMigratedTo(ann map[string]string, want string) {
	if want == "" {
		delete(ann, storagehelpers.AnnMigratedTo)
		return
	}
	ann[storagehelpers.AnnMigratedTo] = want
}

// deletionFinalizers is modifyDeletionFinalizers: only for dynamically
// provisioned PVs. A migrated plugin's PV loses the in-tree finalizer (its
// CSI driver's external provisioner protects it). A PV of another in-tree
// plugin gets the in-tree finalizer under Delete, loses it under Retain or
// Recycle, and always loses the external one (migration rolled back).
func deletionFinalizers(pv *v1.PersistentVolume) ([]string, bool) {
	if !metav1.HasAnnotation(pv.ObjectMeta, storagehelpers.AnnDynamicallyProvisioned) {
		return pv.Finalizers, false
	}
	provisioner := pv.Annotations[storagehelpers.AnnDynamicallyProvisioned]
	if MigratedDriver(provisioner) != "" {
		return WithoutFinalizer(pv.Finalizers, InTreeFinalizer)
	}
	if !strings.HasPrefix(provisioner, inTreePrefix) {
		return pv.Finalizers, false
	}
	out, modified := pv.Finalizers, false
	switch policy := pv.Spec.PersistentVolumeReclaimPolicy; {
	case policy == v1.PersistentVolumeReclaimDelete && !slices.Contains(out, InTreeFinalizer):
		out, modified = append(slices.Clone(out), InTreeFinalizer), true
	case policy == v1.PersistentVolumeReclaimRetain || policy == v1.PersistentVolumeReclaimRecycle:
		out, modified = WithoutFinalizer(out, InTreeFinalizer)
	}
	out, externalRemoved := WithoutFinalizer(out, ExternalFinalizer)
	return out, modified || externalRemoved
}

// WithoutFinalizer is list without any f, and whether there was one; list
// itself is never modified (it may be an informer cache's).
func WithoutFinalizer(list []string, f string) ([]string, bool) {
	if !slices.Contains(list, f) {
		return list, false
	}
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == f }), true
}
