package binding

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A recycle scrubs a Released volume with a pod named recycler-for-<pv>, as
// the reference does. The name is fixed (so a second scrub of one volume
// cannot start beside the first), which means anyone who can create pods in
// the recycler namespace can put a pod of that name there: a leftover of an
// earlier scrub, or one made to look finished. The reference never trusts a
// pod it finds under that name: it deletes it and scrubs again
// (recyclerclient.internalRecycleVolumeByWatchingPodUntilCompletion). Its
// only proof of "ours" is the goroutine that created the pod and watches it,
// which a restart loses.
//
// volplane keeps the proof on the PV instead, so it survives a restart:
// after creating its pod it records the pod's UID in AnnRecyclerPod. The API
// server chooses UIDs and never reuses one, so no pod made by someone else,
// now or earlier, can match; setting the annotation needs write access to
// PVs, which is the administrator's. The pod in turn names the claim whose
// release it scrubs (AnnRecycledClaim): if a stale annotation survives into
// a later release of the same volume (an administrator edited a Failed PV
// back into use, say), the old pod does not vouch for the new data.
const (
	// AnnRecyclerPod on a Released PV: UID of the recycler pod created for
	// the scrub under way. Removed when the scrub succeeds.
	AnnRecyclerPod = "recycler.volplane.io/pod-uid"
	// AnnRecycledClaim on a recycler pod: UID of the claim whose release the
	// pod scrubs (the PV's claimRef.uid when the pod was created).
	AnnRecycledClaim = "recycler.volplane.io/claim-uid"
	// MsgOldRecyclerPod is the reference's error when it finds a pod under
	// the recycler's name, which it then deletes.
	MsgOldRecyclerPod = "Recycle failed: old recycler pod found, will retry later"
)

// ScrubAction is the next step of a recycle.
type ScrubAction int

const (
	// ScrubStart: create the recycler pod, then record its UID on the PV
	// (RecordScrub).
	ScrubStart ScrubAction = iota
	// ScrubCheckLive: the PV names a pod the cache does not hold (just
	// created, or gone); read it live and decide again with LiveChecked.
	ScrubCheckLive
	// ScrubWait: our pod runs; look again after RetryAfter (its deadline).
	ScrubWait
	// ScrubRemoveOther: a pod under the recycler's name that we did not
	// create for this release: delete it (that very pod, by UID), record
	// Warning VolumeFailedRecycle Message, and start once it is gone.
	ScrubRemoveOther
	// ScrubWaitOtherGone: that pod is already being deleted; its delete
	// event brings the volume back.
	ScrubWaitOtherGone
	// ScrubSucceeded: FinishScrubSpec, phase Available, delete the pod,
	// Normal VolumeRecycled.
	ScrubSucceeded
	// ScrubFailed: phase Failed with Message, delete the pod, Warning
	// VolumeFailedRecycle Message.
	ScrubFailed
	// ScrubOver: the volume's scrub failed before (phase Failed) and no pod
	// is left: nothing to do. Unlike the reference, a failed scrub is not
	// started again on every resync: the volume stays Failed until someone
	// looks at it.
	ScrubOver
	// ScrubRemoveLeftover: the volume's scrub failed before and a recycler
	// pod whose delete failed is left: delete it.
	ScrubRemoveLeftover
)

func (a ScrubAction) String() string {
	return [...]string{"Start", "CheckLive", "Wait", "RemoveOther", "WaitOtherGone", "Succeeded", "Failed", "Over", "RemoveLeftover"}[a]
}

// ScrubInput is what a recycle step needs to decide.
type ScrubInput struct {
	// Volume is Released (or Failed by an earlier scrub), with reclaim
	// policy Recycle and a claimRef.
	Volume *v1.PersistentVolume
	// Pod is the pod named recycler-for-<pv> in the recycler namespace, nil
	// when there is none. With LiveChecked it comes from a live API read.
	Pod         *v1.Pod
	LiveChecked bool
	// Now and Timeout bound how long our pod may run.
	Now     time.Time
	Timeout time.Duration
}

// ScrubDecision is the next step of a recycle.
type ScrubDecision struct {
	Action     ScrubAction
	Message    string        // ScrubRemoveOther, ScrubFailed
	RetryAfter time.Duration // ScrubWait
	Note       string
}

func (d ScrubDecision) String() string {
	s := d.Action.String()
	if d.Note != "" {
		s += " (" + d.Note + ")"
	}
	return s
}

// DecideScrub decides the next step of a recycle.
func DecideScrub(in ScrubInput) ScrubDecision {
	pv, pod := in.Volume, in.Pod
	switch {
	case pv.Status.Phase == v1.VolumeFailed && (pod == nil || pod.DeletionTimestamp != nil):
		return ScrubDecision{Action: ScrubOver, Note: "the scrub failed; not scrubbed again"}
	case pv.Status.Phase == v1.VolumeFailed:
		return ScrubDecision{Action: ScrubRemoveLeftover, Note: "the scrub failed; its recycler pod is left"}
	case pod == nil && pv.Annotations[AnnRecyclerPod] != "" && !in.LiveChecked:
		return ScrubDecision{Action: ScrubCheckLive, Note: "the recorded recycler pod is not in the cache"}
	case pod == nil:
		return ScrubDecision{Action: ScrubStart, Note: "no recycler pod"}
	case !IsOurScrub(pv, pod) && pod.DeletionTimestamp != nil:
		return ScrubDecision{Action: ScrubWaitOtherGone, Note: "a recycler pod we did not create is going away"}
	case !IsOurScrub(pv, pod):
		return ScrubDecision{Action: ScrubRemoveOther, Message: MsgOldRecyclerPod,
			Note: "recycler pod " + string(pod.UID) + " was not created for this release"}
	case pod.Status.Phase == v1.PodSucceeded:
		return ScrubDecision{Action: ScrubSucceeded, Note: "our recycler pod succeeded"}
	case pod.Status.Phase == v1.PodFailed:
		return ScrubDecision{Action: ScrubFailed, Note: "our recycler pod failed",
			Message: "Recycle failed: recycler pod " + pod.Name + " failed: " + pod.Status.Message}
	}
	age := in.Now.Sub(pod.CreationTimestamp.Time)
	if age > in.Timeout {
		return ScrubDecision{Action: ScrubFailed, Note: "our recycler pod ran out of time",
			Message: fmt.Sprintf("Recycle failed: recycler pod %s did not finish in %s", pod.Name, in.Timeout)}
	}
	return ScrubDecision{Action: ScrubWait, RetryAfter: in.Timeout - age + time.Second, Note: "our recycler pod runs"}
}

// IsOurScrub reports whether pod is the recycler pod created for the
// current release of pv: its UID is the one recorded on the PV, and it
// scrubs the release of the claim the PV still names.
func IsOurScrub(pv *v1.PersistentVolume, pod *v1.Pod) bool {
	return pod.UID != "" && string(pod.UID) == pv.Annotations[AnnRecyclerPod] &&
		pv.Spec.ClaimRef != nil && pod.Annotations[AnnRecycledClaim] == string(pv.Spec.ClaimRef.UID)
}

// RecordScrub records the recycler pod just created on the PV.
func RecordScrub(pv *v1.PersistentVolume, pod *v1.Pod) *v1.PersistentVolume {
	if pv.Annotations[AnnRecyclerPod] == string(pod.UID) {
		return nil
	}
	out := pv.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnRecyclerPod] = string(pod.UID)
	return out
}

// FinishScrubSpec frees a scrubbed volume: UnbindVolumeSpec, and the record
// of the scrub goes with it. Follow with SetVolumePhase(Available).
func FinishScrubSpec(pv *v1.PersistentVolume) *v1.PersistentVolume {
	out := UnbindVolumeSpec(pv)
	if _, recorded := pv.Annotations[AnnRecyclerPod]; !recorded {
		return out
	}
	if out == nil {
		out = pv.DeepCopy()
	}
	delete(out.Annotations, AnnRecyclerPod)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out
}

// A recycler pod is named recycler-for-<pv> (as in Kubernetes) in the
// recycler namespace, mounts the volume at /scrub and empties it.
const (
	// recyclerPrefix starts the name of every recycler pod.
	recyclerPrefix = "recycler-for-"
	// LabelRecycledVolume marks recycler pods with the PV they scrub (for
	// people; the binder finds them by name).
	LabelRecycledVolume = "recycler.volplane.io/volume"
	scrubScript         = `test -e /scrub && find /scrub -mindepth 1 -delete && test -z "$(ls -A /scrub)" || exit 1`
)

// RecyclerPodName is the name of the pod that scrubs the PV.
func RecyclerPodName(pvName string) string { return recyclerPrefix + pvName }

// RecycledVolume is the PV a pod of that name would scrub, if it is named
// as a recycler pod. Whoever made it: a pod we did not create must be
// removed before our scrub can start.
func RecycledVolume(podName string) (string, bool) {
	return strings.CutPrefix(podName, recyclerPrefix)
}

// ScrubSource is the volume source a recycler pod can mount: only hostPath
// and NFS volumes can be recycled, as in Kubernetes.
func ScrubSource(pv *v1.PersistentVolume) (v1.VolumeSource, bool) {
	s := pv.Spec.PersistentVolumeSource
	switch {
	case s.HostPath != nil:
		return v1.VolumeSource{HostPath: s.HostPath}, true
	case s.NFS != nil:
		return v1.VolumeSource{NFS: s.NFS}, true
	}
	return v1.VolumeSource{}, false
}

// RecyclerPod is the pod that scrubs pv through source (ScrubSource), in
// namespace, with image (which needs a POSIX shell and find). It names the
// claim whose release it scrubs (AnnRecycledClaim).
func RecyclerPod(pv *v1.PersistentVolume, source v1.VolumeSource, namespace, image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: RecyclerPodName(pv.Name), Namespace: namespace,
			Labels:      map[string]string{LabelRecycledVolume: pv.Name},
			Annotations: map[string]string{AnnRecycledClaim: string(pv.Spec.ClaimRef.UID)},
		},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name: "recycler", Image: image,
				Command:      []string{"/bin/sh", "-c", scrubScript},
				VolumeMounts: []v1.VolumeMount{{Name: "vol", MountPath: "/scrub"}},
			}},
			Volumes: []v1.Volume{{Name: "vol", VolumeSource: source}},
		},
	}
}
