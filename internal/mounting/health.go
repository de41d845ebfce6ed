package mounting

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/component-helpers/storage/ephemeral"
)

// HealthTarget is a pod's claim volume whose health the node service is
// asked, as the kubelet's volume health manager asks
// (cache.GetVolumesToReportHealth): CSI volumes of live pods with a
// publication attempted on this node, named by pod.spec.volumes[].name,
// with the staging and target paths.
type HealthTarget struct {
	Pod *corev1.Pod
	// Volume is the name in pod.spec.volumes.
	Volume         string
	Driver, Handle string
	// StagingPath is the path NodeStageVolume got (the block mapper's
	// staging path for a block volume), empty when the driver does not
	// stage, as CSI 1.13 asks; PublishPath is the publication's target
	// path.
	StagingPath, PublishPath string
}

// HealthTargets lists the volumes of live pods whose publication on this
// node was attempted (found on disk, done or not), on a node service with
// GET_VOLUME_HEALTH, sorted by pod and volume. The claim and volume are
// resolved as a mount resolves them, so a pod names only its own claims'
// volumes.
func (w World) HealthTargets(l Layout) []HealthTarget {
	published := map[[2]string]Published{}
	for _, p := range w.Published {
		published[[2]string{string(p.PodUID), p.PV}] = p
	}
	var out []HealthTarget
	for _, pod := range w.Pods {
		if !isLive(pod) {
			continue
		}
		for i := range pod.Spec.Volumes {
			if t, ok := w.healthTarget(l, pod, &pod.Spec.Volumes[i], published); ok {
				out = append(out, t)
			}
		}
	}
	slices.SortFunc(out, func(a, b HealthTarget) int {
		return strings.Compare(a.Pod.Namespace+"/"+a.Pod.Name+"/"+a.Volume, b.Pod.Namespace+"/"+b.Pod.Name+"/"+b.Volume)
	})
	return out
}

func (w World) healthTarget(l Layout, pod *corev1.Pod, pv *corev1.Volume, published map[[2]string]Published) (HealthTarget, bool) {
	var claim string
	switch {
	case pv.PersistentVolumeClaim != nil:
		claim = pv.PersistentVolumeClaim.ClaimName
	case pv.Ephemeral != nil:
		claim = ephemeral.VolumeClaimName(pod, pv)
	default:
		return HealthTarget{}, false // inline CSI volumes have no handle to ask, as the kubelet skips them
	}
	vol, reason, _ := w.resolve(pod, claim, pv.Ephemeral != nil, false)
	if vol == nil || reason != "" {
		return HealthTarget{}, false
	}
	p, ok := published[[2]string{string(pod.UID), vol.PV.Name}]
	drv := w.Drivers[vol.Driver]
	if !ok || !drv.VolumeHealth {
		return HealthTarget{}, false
	}
	t := HealthTarget{Pod: pod, Volume: pv.Name, Driver: vol.Driver, Handle: vol.Handle}
	_, t.PublishPath = l.PublishPaths(p.Block, pod.UID, vol.PV.Name)
	if drv.Stage {
		_, t.StagingPath = l.StagePaths(p.Block, vol.Driver, vol.Handle, vol.PV.Name)
	}
	return t, true
}
