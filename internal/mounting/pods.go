package mounting

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/volplane/volplane/internal/attachment"
)

// pvcProtectionFinalizer lets a pod start on a claim being deleted: the
// claim cannot go while the pod uses it (the reference's check).
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// isLive says whether the pod's volumes are wanted: it is not being deleted
// and has not terminated.
func isLive(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// podPlan decides each CSI volume of a live pod. Volumes that are neither
// claims nor generic ephemeral volumes (projected, configMap, secret,
// emptyDir, hostPath...) need nothing, nor do claims of volumes that are
// not CSI.
func (w World) podPlan(pod *corev1.Pod, d *disk) PodPlan {
	pp := PodPlan{Pod: pod}
	for i := range pod.Spec.Volumes {
		pv := &pod.Spec.Volumes[i]
		var claim string
		var readOnly bool
		switch {
		case pv.PersistentVolumeClaim != nil:
			claim, readOnly = pv.PersistentVolumeClaim.ClaimName, pv.PersistentVolumeClaim.ReadOnly
		case pv.Ephemeral != nil:
			claim = ephemeral.VolumeClaimName(pod, pv)
		default:
			continue
		}
		vol, reason, err := w.resolve(pod, claim, pv.Ephemeral != nil, readOnly)
		if vol != nil {
			if msg := volumeModeMismatch(pod, pv.Name, vol.PV); msg != "" {
				vol, reason, err = nil, VolumeModeMismatch, msg
			}
		}
		switch {
		case reason != "":
			pp.Steps = append(pp.Steps, Step{Name: pv.Name, Action: Wait, Reason: reason, Err: err})
		case vol != nil:
			step := w.next(pod, vol, d)
			step.Name = pv.Name
			pp.Steps = append(pp.Steps, step)
		}
	}
	return pp
}

// resolve finds the CSI volume behind a pod's claim, or the reason it
// cannot, with the reference's error text. A nil volume and no reason: the
// volume is not CSI and needs nothing here.
func (w World) resolve(pod *corev1.Pod, claimName string, isEphemeral, readOnly bool) (*Volume, Reason, string) {
	ns := pod.Namespace
	fail := func(r Reason, format string, a ...any) (*Volume, Reason, string) {
		return nil, r, fmt.Sprintf("error processing PVC %s/%s: ", ns, claimName) + fmt.Sprintf(format, a...)
	}
	claim := w.Claims[ns+"/"+claimName]
	switch {
	case claim == nil:
		return fail(ClaimNotFound, "failed to fetch PVC from API server: persistentvolumeclaims %q not found", claimName)
	case claim.DeletionTimestamp != nil && !slices.Contains(claim.Finalizers, pvcProtectionFinalizer):
		return fail(ClaimBeingDeleted, "PVC is being deleted")
	case claim.Status.Phase != corev1.ClaimBound:
		return fail(ClaimNotBound, "PVC is not bound")
	case claim.Spec.VolumeName == "":
		return fail(ClaimNotBound, "PVC has empty pvc.Spec.VolumeName")
	}
	if isEphemeral {
		if err := ephemeral.VolumeIsForPod(pod, claim); err != nil {
			return nil, ClaimNotForPod, err.Error()
		}
	}
	name := claim.Spec.VolumeName
	pv := w.Volumes[name]
	switch {
	case pv == nil:
		return fail(VolumeNotFound, "failed to fetch PV %s from API server: persistentvolumes %q not found", name, name)
	case pv.Spec.ClaimRef == nil:
		return fail(VolumeNotBoundToClaim, "found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", name)
	case pv.Spec.ClaimRef.UID != claim.UID:
		return fail(VolumeNotBoundToClaim, "found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", name, pv.Spec.ClaimRef.UID, claim.UID)
	case pv.Spec.CSI == nil:
		return nil, "", ""
	}
	src := pv.Spec.CSI
	v := &Volume{PV: pv, Claim: claim, Driver: src.Driver, Handle: src.VolumeHandle, ReadOnly: readOnly || src.ReadOnly,
		Attachable: w.attachable(src.Driver), Unique: attachment.UniqueVolumeName(src.Driver, src.VolumeHandle)}
	if v.Attachable {
		v.Attachment = attachment.Name(src.VolumeHandle, src.Driver, w.Node)
	}
	return v, "", ""
}

// volumeModeMismatch says, as the kubelet does, why the pod's containers
// cannot use the volume named name as they ask (a Block volume in
// volumeMounts, a Filesystem one in volumeDevices), or "".
func volumeModeMismatch(pod *corev1.Pod, name string, pv *corev1.PersistentVolume) string {
	mode := corev1.PersistentVolumeFilesystem
	if pv.Spec.VolumeMode != nil {
		mode = *pv.Spec.VolumeMode
	}
	var mounted, device bool
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		mounted = mounted || slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name })
		device = device || slices.ContainsFunc(c.VolumeDevices, func(d corev1.VolumeDevice) bool { return d.Name == name })
	}
	switch {
	case mounted && mode != corev1.PersistentVolumeFilesystem:
		return fmt.Sprintf("volume %s has volumeMode %s, but is specified in volumeMounts", name, mode)
	case device && mode != corev1.PersistentVolumeBlock:
		return fmt.Sprintf("volume %s has volumeMode %s, but is specified in volumeDevices", name, mode)
	}
	return ""
}

// next decides the next step for a resolved volume: published already,
// waiting for its driver or its attachment, or staging then publishing.
func (w World) next(pod *corev1.Pod, v *Volume, d *disk) Step {
	step := Step{Volume: v}
	if p, ok := d.published[publicationKey{pod.UID, v.PV.Name}]; ok && p.Done {
		step.Action = Done
		if w.expand(&step, pod, d); step.Expand != nil {
			step.Action = ExpandOnNode
		}
		return step
	}
	if _, ok := w.Drivers[v.Driver]; !ok {
		step.Reason = DriverNotServed
		step.Err = fmt.Sprintf("kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name %s not found in the list of registered CSI drivers", v.Driver)
		return step
	}
	if v.Attachable {
		if reason, err := w.attachWait(v); reason != "" {
			step.Reason, step.Err = reason, err
			return step
		}
	}
	if s, ok := d.staged[volumeKey{v.Driver, v.Handle}]; ok && s.Done {
		step.Action = Publish
	} else {
		step.Action = Stage
	}
	w.expand(&step, pod, d)
	return step
}

// expand decides the step's node expansion, from the size the node's
// staging record says it last saw.
func (w World) expand(step *Step, pod *corev1.Pod, d *disk) {
	v := step.Volume
	var node Staged
	if s, ok := d.staged[volumeKey{v.Driver, v.Handle}]; ok && s.Done {
		node = s
	}
	step.Expand, step.NotExpanded = w.expansion(pod, v, node)
}

// attachWait says what an attachable volume still waits for: being
// reported in use (the kubelet verifies attachment only after that), being
// in node.status.volumesAttached, then its VolumeAttachment attached. An
// attach error on the VolumeAttachment is the WaitForAttach error the
// kubelet reports.
func (w World) attachWait(v *Volume) (Reason, string) {
	if !slices.Contains(w.Reported, v.Unique) {
		return NotReportedInUse, ""
	}
	if !w.Attached[v.Unique] {
		return NotAttached, ""
	}
	va := w.Attachments[v.Attachment]
	switch {
	case va == nil:
		return NotAttached, fmt.Sprintf("volume %s has GET error for volume attachment %s: volumeattachments.storage.k8s.io %q not found", v.Handle, v.Attachment, v.Attachment)
	case va.Status.AttachError != nil && !va.Status.Attached:
		return NotAttached, va.Status.AttachError.Message
	case !va.Status.Attached:
		return NotAttached, ""
	}
	return "", ""
}

// FailureMessage is the pod-level FailedMount message the reference records
// when the pod's volumes could not be processed ("" when they could: a
// plain wait records nothing).
func (p PodPlan) FailureMessage() string {
	var unmounted, unattached, failed, errs []string
	for _, s := range p.Steps {
		if !s.Action.published() {
			unmounted = append(unmounted, s.Name)
		}
		if s.Action == Wait && s.Reason.processingFailed() {
			failed = append(failed, s.Name)
			errs = append(errs, s.Err)
		}
		if s.Action == Wait && (s.Reason == NotAttached || s.Reason == NotReportedInUse) {
			unattached = append(unattached, s.Name)
		}
	}
	if len(failed) == 0 {
		return ""
	}
	slices.Sort(unmounted)
	slices.Sort(unattached)
	slices.Sort(failed)
	return fmt.Sprintf("Unable to attach or mount volumes: unmounted volumes=%v, unattached volumes=%v, failed to process volumes=%v: %s",
		unmounted, unattached, failed, strings.Join(errs, "; "))
}
