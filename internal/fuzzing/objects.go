package fuzzing

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

// The vocabularies objects are decoded from: two tenants' namespaces, two
// claim names, and sizes at the edges of what a quantity can say (past
// int64, fractions of a byte, negative). Word adds any other string.
var (
	Namespaces      = []string{"default", "evil"}
	ClaimNames      = []string{"data", "b"}
	ClaimUIDs       = []types.UID{"uid-data", "uid-b", "uid-old"}
	Classes         = []string{"", "gold", "silver"}
	Sizes           = []string{"1Gi", "2Gi", "1", "0.5", "1m", "18446744074783293440", "1E30", "9223372036854775807k", "-1", "0"}
	AccessModeWords = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany, v1.ReadWriteMany, v1.ReadWriteOncePod, "ReadWriteSometimes"}
	LabelKeys       = []string{"tier", "zone", "app.kubernetes.io/name"}
	LabelValues     = []string{"a", "b", ""}
	Operators       = []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn,
		metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist, "Gt"}
)

// Quantity is a parsed quantity; false when the word does not parse (the
// field is left out then, as the API server would reject it).
func (in *Input) Quantity() (resource.Quantity, bool) {
	q, err := resource.ParseQuantity(in.Word(Sizes...))
	return q, err == nil
}

// AccessModes are up to three modes, repeats and an unknown one included.
func (in *Input) AccessModes() []v1.PersistentVolumeAccessMode {
	var modes []v1.PersistentVolumeAccessMode
	for n := in.Intn(4); n > 0; n-- {
		modes = append(modes, Pick(in, AccessModeWords...))
	}
	return modes
}

// VolumeMode is unset, Block, Filesystem or any string.
func (in *Input) VolumeMode() *v1.PersistentVolumeMode {
	switch in.Intn(4) {
	case 1:
		return ptr.To(v1.PersistentVolumeBlock)
	case 2:
		return ptr.To(v1.PersistentVolumeFilesystem)
	case 3:
		return ptr.To(v1.PersistentVolumeMode(in.Raw(12)))
	}
	return nil
}

// Labels are up to two labels, nil for none.
func (in *Input) Labels() map[string]string {
	n := in.Intn(3)
	if n == 0 {
		return nil
	}
	labels := map[string]string{}
	for ; n > 0; n-- {
		labels[in.Word(LabelKeys...)] = in.Word(LabelValues...)
	}
	return labels
}

// Selector is nil or any selector a user can write, invalid ones included.
func (in *Input) Selector() *metav1.LabelSelector {
	if in.Intn(3) != 0 {
		return nil
	}
	sel := &metav1.LabelSelector{MatchLabels: in.Labels()}
	for n := in.Intn(3); n > 0; n-- {
		req := metav1.LabelSelectorRequirement{Key: in.Word(LabelKeys...), Operator: Pick(in, Operators...)}
		for m := in.Intn(3); m > 0; m-- {
			req.Values = append(req.Values, in.Word(LabelValues...))
		}
		sel.MatchExpressions = append(sel.MatchExpressions, req)
	}
	return sel
}

// Annotate sets some of keys, each to a word.
func (in *Input) Annotate(meta *metav1.ObjectMeta, keys ...string) {
	for _, k := range keys {
		if in.Intn(3) == 0 {
			metav1.SetMetaDataAnnotation(meta, k, in.Word("yes", "", "node-1", "hostpath.csi.volplane.io", "gold"))
		}
	}
}

// Claim decodes a claim of one of Namespaces, named one of ClaimNames,
// with every field and annotation a namespace user writes; spec.volumeName,
// when set, is one of pvNames or any word. Its UID is never empty (the API
// server sets it) and is one of the first two ClaimUIDs.
func (in *Input) Claim(pvNames []string) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
		Namespace: Pick(in, Namespaces...), Name: Pick(in, ClaimNames...),
		UID: Pick(in, ClaimUIDs[:2]...), ResourceVersion: "7"}}
	c.Spec.AccessModes = in.AccessModes()
	if q, ok := in.Quantity(); ok {
		c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: q}
	}
	if in.Bool() {
		c.Spec.StorageClassName = ptr.To(in.Word(Classes...))
	}
	c.Spec.VolumeMode = in.VolumeMode()
	if in.Intn(4) == 0 {
		c.Spec.VolumeAttributesClassName = ptr.To(in.Word("fast", ""))
	}
	c.Spec.Selector = in.Selector()
	if in.Intn(3) == 0 {
		c.Spec.VolumeName = in.Word(pvNames...)
	}
	in.Annotate(&c.ObjectMeta, v1.BetaStorageClassAnnotation, storagehelpers.AnnBindCompleted,
		storagehelpers.AnnBoundByController, storagehelpers.AnnSelectedNode, storagehelpers.AnnStorageProvisioner)
	if in.Intn(6) == 0 {
		c.DeletionTimestamp = &metav1.Time{}
	}
	c.Status.Phase = Pick(in, v1.ClaimPending, v1.ClaimBound, v1.ClaimLost, "")
	return c
}

// Volume decodes a volume named name, its claimRef (when set) naming one
// of the claims Claim decodes, by name only or with any of ClaimUIDs.
func (in *Input) Volume(name string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("pv-uid-" + name), Labels: in.Labels()}}
	if q, ok := in.Quantity(); ok {
		pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: q}
	}
	pv.Spec.AccessModes = in.AccessModes()
	pv.Spec.StorageClassName = in.Word(Classes...)
	pv.Spec.VolumeMode = in.VolumeMode()
	if in.Intn(4) == 0 {
		pv.Spec.VolumeAttributesClassName = ptr.To(in.Word("fast", ""))
	}
	if in.Intn(3) > 0 {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: Pick(in, Namespaces...),
			Name: Pick(in, ClaimNames...), UID: Pick(in, append([]types.UID{""}, ClaimUIDs...)...)}
	}
	pv.Spec.PersistentVolumeReclaimPolicy = Pick(in, v1.PersistentVolumeReclaimRetain,
		v1.PersistentVolumeReclaimDelete, v1.PersistentVolumeReclaimRecycle, "")
	if in.Bool() {
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: "hostpath.csi.volplane.io", VolumeHandle: "h-" + name}
	}
	in.Annotate(&pv.ObjectMeta, v1.BetaStorageClassAnnotation, storagehelpers.AnnBoundByController,
		storagehelpers.AnnDynamicallyProvisioned, storagehelpers.AnnMigratedTo)
	if in.Intn(8) == 0 {
		pv.DeletionTimestamp = &metav1.Time{}
	}
	pv.Status.Phase = Pick(in, v1.VolumeAvailable, v1.VolumePending, v1.VolumeBound, v1.VolumeReleased, v1.VolumeFailed)
	return pv
}
