package mounting

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	volumehelpers "k8s.io/component-helpers/storage/volume"

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
		case pv.CSI != nil:
			pp.Steps = append(pp.Steps, w.inline(pod, pv, d))
			continue
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
	// Read-only is the pod's claim source's alone, as the kubelet's volume
	// spec: the PV's csi.readOnly is the attacher's (ControllerPublish).
	v := &Volume{PV: pv, Claim: claim, Driver: src.Driver, Handle: src.VolumeHandle, ReadOnly: readOnly,
		Block:      pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock,
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
// or, in the kubelet's order, waiting for it to be reported in use and in
// the node's volumesAttached (the reconciler's VerifyControllerAttachedVolume),
// refused by the mount's own checks (node affinity, ReadWriteOncePod), waiting
// for its VolumeAttachment (WaitForAttach) or its driver (MountDevice), or
// staging then publishing.
func (w World) next(pod *corev1.Pod, v *Volume, d *disk) Step {
	step := Step{Volume: v}
	if p, ok := d.published[publicationKey{pod.UID, v.PV.Name}]; ok && p.Done {
		step.Action = Done
		if w.expand(&step, pod, d); step.Expand != nil {
			step.Action = ExpandOnNode
		}
		return step
	}
	if v.Attachable {
		if reason := w.attachedByNode(v); reason != "" {
			step.Reason = reason
			return step
		}
	}
	if reason, err := w.mountRefusal(pod, v, d); reason != "" {
		step.Reason, step.Err = reason, err
		return step
	}
	if v.Attachable {
		if err := w.attachmentWait(v); err != "" {
			step.Reason, step.Err = NotAttached, err
			return step
		}
	}
	if _, ok := w.Drivers[v.Driver]; !ok {
		step.Reason = DriverNotServed
		step.Err = fmt.Sprintf("kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name %s not found in the list of registered CSI drivers", v.Driver)
		if v.Block {
			step.Err = fmt.Sprintf("kubernetes.io/csi: blockMapper.SetUpDevice failed to get CSI client: driver name %s not found in the list of registered CSI drivers", v.Driver)
		}
		return step
	}
	if s, ok := d.staged[volumeKey{v.Driver, v.Handle}]; ok && s.Done {
		step.Action = Publish
	} else {
		step.Action = Stage
	}
	if !v.Block { // the block mapper does not check lifecycle modes
		v.PublishRefused = w.lifecycleRefusal(v)
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

// attachedByNode says what an attachable volume waits for before the
// kubelet tries to mount it: being reported in use (it verifies attachment
// only after that), then being in node.status.volumesAttached.
func (w World) attachedByNode(v *Volume) Reason {
	switch {
	case !slices.Contains(w.Reported, v.Unique):
		return NotReportedInUse
	case !w.Attached[v.Unique]:
		return NotAttached
	}
	return ""
}

// attachmentWait is the kubelet's WaitForAttach: the volume's
// VolumeAttachment must exist, not be being deleted, and say attached;
// otherwise its error text ("" once attached).
func (w World) attachmentWait(v *Volume) string {
	va := w.Attachments[v.Attachment]
	switch {
	case va == nil:
		return fmt.Sprintf("volume %s has GET error for volume attachment %s: volumeattachments.storage.k8s.io %q not found", v.Handle, v.Attachment, v.Attachment)
	case va.DeletionTimestamp != nil:
		return "volume attachment is being deleted"
	case va.Status.Attached:
		return ""
	case va.Status.AttachError != nil:
		return va.Status.AttachError.Message
	}
	return fmt.Sprintf("volume %s is not attached for volume attachment %s", v.Handle, v.Attachment)
}

// mountRefusal is what the kubelet's mount operation checks before it
// waits for the attachment: the PV's node affinity against the node's
// labels, and a volume whose only access mode is ReadWriteOncePod that
// another pod of the node has published (or may have: a record not done
// counts), with the kubelet's texts.
func (w World) mountRefusal(pod *corev1.Pod, v *Volume, d *disk) (Reason, string) {
	if w.Registered {
		if err := volumehelpers.CheckNodeAffinity(v.PV, w.NodeLabels); err != nil {
			return NodeAffinityMismatch, err.Error()
		}
	}
	if readWriteOncePodOnly(v.PV) {
		for _, p := range d.published {
			if p.PodUID != pod.UID && p.key() == (volumeKey{v.Driver, v.Handle}) {
				return InUseByAnotherPod, "volume uses the ReadWriteOncePod access mode and is already in use by another pod"
			}
		}
	}
	return "", ""
}

// lifecycleRefusal is the kubelet's check at publish (SetUp) that the
// driver's CSIDriver, if any, lists the Persistent lifecycle mode: its
// error text, or "". An empty list is the API's default, Persistent.
func (w World) lifecycleRefusal(v *Volume) string {
	d := w.CSIDrivers[v.Driver]
	if d == nil || len(d.Spec.VolumeLifecycleModes) == 0 || slices.Contains(d.Spec.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent) {
		return ""
	}
	return fmt.Sprintf("kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode %q not supported by driver %s (only supports %q)",
		storagev1.VolumeLifecyclePersistent, v.Driver, d.Spec.VolumeLifecycleModes)
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
