package attachment

import (
	"cmp"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/volplane/volplane/internal/binding"
)

// Desired is one volume the node's pods want attached.
type Desired struct {
	// Volume is the volume as the first of Pods reaches it (its PV, or its
	// inline source); other pods may reach it through other PVs naming
	// the same volume.
	Volume
	// AttachRequired is false for a CSI driver whose CSIDriver says
	// attachRequired: false; such a volume gets no attachment.
	AttachRequired bool
	// Pods are the pods that want it, sorted by namespace and name.
	Pods []*v1.Pod
}

// pluginName is the metrics label of the volume's plugin, as the
// reference's GetFullQualifiedPluginNameForVolume makes it.
func (d *Desired) pluginName() string {
	if d.Kind == KindInTree {
		return d.Plugin
	}
	return pluginLabel(d.Driver)
}

func pluginLabel(driver string) string { return csiPluginName + ":" + driver }

// desiredVolumes resolves the attachable volumes of the node's
// non-terminated pods, by unique volume name (as the reference's desired
// state of world keys them: two PersistentVolumes naming one volume are
// one volume, attached once); volumes that cannot be resolved yet are
// returned as waits. Volumes that are not attachable (nfs, hostPath,
// configMap, ...) are not this controller's business and are skipped
// without a word.
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
			vol, ok, wait := resolve(f, pod, &pod.Spec.Volumes[i])
			switch {
			case wait != nil:
				waits = append(waits, *wait)
			case ok:
				addUse(desired, f, vol, pod)
			}
		}
	}
	return desired, waits
}

// addUse records that pod wants vol. The first pod's volume (in pod
// order) names it in events and in the attachment's source.
func addUse(desired map[v1.UniqueVolumeName]*Desired, f Facts, vol Volume, pod *v1.Pod) {
	d, ok := desired[vol.Unique]
	if !ok {
		d = &Desired{Volume: vol, AttachRequired: vol.Kind == KindInTree || attachRequired(f, vol.Driver)}
		desired[vol.Unique] = d
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

// resolve follows one pod volume to the volume it attaches: false for a
// volume that attaches nothing. An inline volume is its own source; a
// claim (or a generic ephemeral volume's claim) leads to its bound PV.
func resolve(f Facts, pod *v1.Pod, vol *v1.Volume) (Volume, bool, *Wait) {
	waitFor := func(r WaitReason, volume, detail string) (Volume, bool, *Wait) {
		return Volume{}, false, &Wait{Volume: volume, Pod: pod, Reason: r, Detail: detail}
	}
	var claimName string
	switch {
	case vol.PersistentVolumeClaim != nil:
		claimName = vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil:
		claimName = ephemeral.VolumeClaimName(pod, vol)
	default:
		v, ok, err := FromInline(pod, vol)
		if err != nil {
			return waitFor(TranslationFailed, vol.Name, translationMsg(err))
		}
		return v, ok, nil
	}
	key := pod.Namespace + "/" + claimName
	claim := f.Claims[key]
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
	}
	v, ok, err := FromPV(pv)
	if err != nil {
		return waitFor(TranslationFailed, pv.Name, translationMsg(err))
	}
	return v, ok, nil
}

// translationMsg is kube-controller-manager's text for a failed
// translation (csimigration.TranslateInTreeSpecToCSI).
func translationMsg(err error) string { return "failed to translate in-tree pv to CSI: " + err.Error() }
