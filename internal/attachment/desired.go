package attachment

import (
	"cmp"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/volplane/volplane/internal/binding"
)

// Desired is one CSI volume the node's pods want attached.
type Desired struct {
	// PV is the PersistentVolume the first of Pods reaches the volume
	// through; other pods may reach it through other PVs of the same
	// driver and handle.
	PV             *v1.PersistentVolume
	Driver, Handle string
	Unique         v1.UniqueVolumeName
	// AttachRequired is false for a driver whose CSIDriver says
	// attachRequired: false; such a volume gets no attachment.
	AttachRequired bool
	// Pods are the pods that want it, sorted by namespace and name.
	Pods []*v1.Pod
}

// pluginName is the metrics label of the volume's plugin, as the
// reference's GetFullQualifiedPluginNameForVolume makes it.
func (d *Desired) pluginName() string { return pluginLabel(d.Driver) }

func pluginLabel(driver string) string { return csiPluginName + ":" + driver }

// desiredVolumes resolves the CSI volumes of the node's non-terminated
// pods, by unique volume name (as the reference's desired state of world
// keys them: two PersistentVolumes naming one driver and handle are one
// volume, attached once); volumes that cannot be resolved yet are
// returned as waits. Volumes that are not CSI (in-tree, inline) are not
// this controller's business and are skipped without a word.
func desiredVolumes(f Facts) (map[v1.UniqueVolumeName]*Desired, []Wait) {
	desired := map[v1.UniqueVolumeName]*Desired{}
	var waits []Wait
	pods := slices.Clone(f.Pods)
	slices.SortFunc(pods, func(a, b *v1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, pod := range pods {
		if pod.Spec.NodeName != f.Node.Name || binding.PodTerminated(pod) {
			continue
		}
		for i := range pod.Spec.Volumes {
			pv, wait := resolve(f, pod, &pod.Spec.Volumes[i])
			switch {
			case wait != nil:
				waits = append(waits, *wait)
			case pv != nil:
				addUse(desired, f, pv, pod)
			}
		}
	}
	return desired, waits
}

// addUse records that pod wants pv. The first pod's PV (in pod order)
// names the volume in events and in the attachment's source.
func addUse(desired map[v1.UniqueVolumeName]*Desired, f Facts, pv *v1.PersistentVolume, pod *v1.Pod) {
	csi := pv.Spec.CSI
	unique := UniqueVolumeName(csi.Driver, csi.VolumeHandle)
	d, ok := desired[unique]
	if !ok {
		d = &Desired{PV: pv, Driver: csi.Driver, Handle: csi.VolumeHandle,
			Unique: unique, AttachRequired: attachRequired(f, csi.Driver)}
		desired[unique] = d
	}
	if !slices.Contains(d.Pods, pod) {
		d.Pods = append(d.Pods, pod)
	}
}

// attachRequired: a CSIDriver saying attachRequired: false is the only way
// out; no CSIDriver object at all means attach is required.
func attachRequired(f Facts, driver string) bool {
	d := f.Drivers[driver]
	return d == nil || d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
}

// resolve follows one pod volume to its CSI PersistentVolume: nil, nil for
// a volume that is not a claim or not CSI.
func resolve(f Facts, pod *v1.Pod, vol *v1.Volume) (*v1.PersistentVolume, *Wait) {
	var claimName string
	switch {
	case vol.PersistentVolumeClaim != nil:
		claimName = vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil:
		claimName = ephemeral.VolumeClaimName(pod, vol)
	default:
		return nil, nil
	}
	key := pod.Namespace + "/" + claimName
	claim := f.Claims[key]
	waitFor := func(r WaitReason, volume, detail string) (*v1.PersistentVolume, *Wait) {
		return nil, &Wait{Volume: volume, Pod: pod, Reason: r, Detail: detail}
	}
	switch {
	case claim == nil:
		return waitFor(ClaimNotFound, key, "claim "+key+" not found")
	case vol.Ephemeral != nil && ephemeral.VolumeIsForPod(pod, claim) != nil:
		return waitFor(ClaimNotOwned, key, ephemeral.VolumeIsForPod(pod, claim).Error())
	case claim.Status.Phase != v1.ClaimBound || claim.Spec.VolumeName == "":
		return waitFor(ClaimNotBound, key, fmt.Sprintf("claim %s has phase %q and volumeName %q",
			key, claim.Status.Phase, claim.Spec.VolumeName))
	}
	pv := f.Volumes[claim.Spec.VolumeName]
	switch {
	case pv == nil:
		return waitFor(VolumeNotFound, claim.Spec.VolumeName, "volume "+claim.Spec.VolumeName+" not found")
	case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID:
		return waitFor(VolumeNotBoundToClaim, pv.Name, "volume "+pv.Name+" is not bound to claim "+key)
	case pv.Spec.CSI == nil:
		return nil, nil
	}
	return pv, nil
}
