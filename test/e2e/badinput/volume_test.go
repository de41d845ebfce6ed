package badinput

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// PersistentVolumes with optional fields at their edges, past the API
// server: what the binder makes of them, and of the claims that name or
// match them.
func TestVolumesAtTheirEdges(t *testing.T) {
	e := newEnv(t)
	ofClass := func(class string) func(*env, *corev1.PersistentVolume) {
		return func(e *env, pv *corev1.PersistentVolume) { pv.Spec.StorageClassName = e.ns + "-" + class }
	}
	claimRef := func(claim string, uid types.UID) func(*env, *corev1.PersistentVolume) {
		return func(e *env, pv *corev1.PersistentVolume) {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: e.ns, Name: claim, UID: uid}
		}
	}
	garbageMountOptions := []string{"--no-such-option", ""}
	e.run([]edgeCase{
		// Its claim is gone (a UID that no claim has): Released, and kept
		// under Retain.
		{name: "claim-ref-to-missing-claim", make: pvWith(claimRef("gone", "0000")), want: volumeIs(corev1.VolumeReleased, "")},
		// No UID: reserved for a claim of that name, which may come.
		{name: "claim-ref-without-uid", make: pvWith(claimRef("to-come", "")), want: volumeIs(corev1.VolumeAvailable, "")},
		// Its claim exists with another UID: the PV is Released, and the
		// claim that names it is told.
		{name: "claim-ref-wrong-uid", make: both(
			pvWith(func(e *env, pv *corev1.PersistentVolume) {
				claimRef("claim-ref-wrong-uid", "0000")(e, pv)
				pv.Spec.StorageClassName = ""
			}),
			claimWith(classNamed(""), func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = e.pvName("claim-ref-wrong-uid") })),
			want: all(volumeIs(corev1.VolumeReleased, ""),
				pending(`Warning FailedBinding: volume "`+e.pvName("claim-ref-wrong-uid")+`" already bound to a different claim.`))},
		// Questionable, as the reference: an Immediate claim binds a PV
		// whose node affinity matches no node; its pods cannot schedule.
		{name: "node-affinity-no-node", make: both(
			pvWith(func(e *env, pv *corev1.PersistentVolume) {
				ofClass("ghost-node")(e, pv)
				pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"ghost"}}}}}}}
			}),
			claimWith(classNamed(e.ns+"-ghost-node"))),
			want: all(volumeIs(corev1.VolumeBound, ""), bound(""))},
		// A class that does not exist is only a name to match on.
		{name: "class-missing", make: both(pvWith(ofClass("missing")), claimWith(classNamed(e.ns+"-missing"))),
			want: all(volumeIs(corev1.VolumeBound, ""), bound(""))},
		// Mount options are the kernel's to judge, at mount time.
		{name: "mount-options", make: pvWith(func(_ *env, pv *corev1.PersistentVolume) { pv.Spec.MountOptions = garbageMountOptions }),
			want: all(volumeIs(corev1.VolumeAvailable, ""), func(e *env, name string) string {
				if got := e.getVolume(e.pvName(name)).Spec.MountOptions; !slices.Equal(got, garbageMountOptions) {
					return fmt.Sprintf("mount options %q", got)
				}
				return ""
			})},
		{name: "host-path-mount-options", make: pvWith(func(_ *env, pv *corev1.PersistentVolume) {
			pv.Spec.CSI = nil
			pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/tmp/volplane-badinput"}
			pv.Spec.MountOptions = []string{"ro"}
		}), want: volumeIs(corev1.VolumeAvailable, "")},
		{name: "thousand-access-modes", make: both(
			pvWith(func(e *env, pv *corev1.PersistentVolume) {
				ofClass("many-modes")(e, pv)
				pv.Spec.AccessModes = repeated(corev1.ReadWriteOnce, 1000)
			}),
			claimWith(classNamed(e.ns+"-many-modes"))),
			want: all(volumeIs(corev1.VolumeBound, ""), bound(""))},
		{name: "one-exbibyte", make: both(
			pvWith(func(e *env, pv *corev1.PersistentVolume) {
				ofClass("huge")(e, pv)
				pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Ei")}
			}),
			claimWith(classNamed(e.ns+"-huge"))),
			want: all(volumeIs(corev1.VolumeBound, ""), bound(""), capacity("1Ei"))},
		// Delete on a CSI PV the provisioner did not make: left alone,
		// Released, as the external-provisioner leaves it.
		{name: "delete-policy-not-provisioned", make: pvWith(func(e *env, pv *corev1.PersistentVolume) {
			claimRef("gone", "1111")(e, pv)
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
		}), want: volumeIs(corev1.VolumeReleased, "")},
		// Recycle is for the in-tree plugins that scrub; a CSI PV cannot be.
		{name: "recycle-csi", make: pvWith(func(e *env, pv *corev1.PersistentVolume) {
			claimRef("gone", "2222")(e, pv)
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
		}), want: volumeIs(corev1.VolumeFailed, "Warning VolumeFailedRecycle: No recycler plugin found for the volume!")},
		// A VolumeAttributesClass that does not exist is only a name to
		// match, as a class is.
		{name: "attributes-class-missing", make: both(
			pvWith(func(e *env, pv *corev1.PersistentVolume) {
				ofClass("vac")(e, pv)
				pv.Spec.VolumeAttributesClassName = ptr.To("no-such-vac")
			}),
			claimWith(classNamed(e.ns+"-vac"), attributesClass("no-such-vac"))),
			want: all(volumeIs(corev1.VolumeBound, ""), bound(""))},
		{name: longName(253 - len(e.ns) - 1), make: pvWith(nil), want: volumeIs(corev1.VolumeAvailable, "")},
	})
	for _, name := range []string{"claim-ref-to-missing-claim", "delete-policy-not-provisioned"} {
		pv := e.getVolume(e.pvName(name))
		if evs := e.events("", pv.Name); pv.Status.Phase != corev1.VolumeReleased || pv.DeletionTimestamp != nil || len(evs) != 0 {
			t.Errorf("%s: %s, deleted %v, events %q; want Released, kept, no event", name, pv.Status.Phase, pv.DeletionTimestamp != nil, evs)
		}
	}
}
