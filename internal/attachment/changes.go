package attachment

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
)

// Which changes of an object can change a decision. The attach/detach loop
// syncs a node (about the volumes the change names) on every change of
// anything the node's decision reads, so a change that cannot alter any
// Plan is not worth a sync: the
// attacher's finalizers on attachments and volumes, the binder's and the
// resizer's annotations and status fields, a node's heartbeat. Each function
// below says whether cur differs from old in something Decide reads (from
// the object itself, or through the Facts built from it); a test holds
// Decide's plan equal across every change they call irrelevant.
//
// PersistentVolumes and VolumeAttachments are compared whole but for the
// fields known not to be read, so a field added to either later counts as
// a change; pods, claims and nodes by the few fields Decide reads of them,
// since their status is written often and read little.

// PodChanged: the node it runs on, whether it has terminated (which a
// deletion or a container's state may change) or its volumes.
func PodChanged(old, cur *v1.Pod) bool {
	return old.Spec.NodeName != cur.Spec.NodeName || binding.PodTerminated(old) != binding.PodTerminated(cur) ||
		!apiequality.Semantic.DeepEqual(old.Spec.Volumes, cur.Spec.Volumes)
}

// ClaimChanged: what resolving a pod's claim reads: its phase, the volume
// it is bound to and its owners (a generic ephemeral volume's claim must be
// its pod's).
func ClaimChanged(old, cur *v1.PersistentVolumeClaim) bool {
	return old.UID != cur.UID || old.Status.Phase != cur.Status.Phase || old.Spec.VolumeName != cur.Spec.VolumeName ||
		!apiequality.Semantic.DeepEqual(old.OwnerReferences, cur.OwnerReferences)
}

// VolumeChanged: anything but its resourceVersion, managed fields,
// finalizers and status (the attacher's finalizer, the binder's phase).
// Labels and annotations count: a migrated source's translation reads them.
func VolumeChanged(old, cur *v1.PersistentVolume) bool {
	o, c := *old, *cur
	o.ObjectMeta, c.ObjectMeta = trimmedMeta(old.ObjectMeta), trimmedMeta(cur.ObjectMeta)
	o.Status, c.Status = v1.PersistentVolumeStatus{}, v1.PersistentVolumeStatus{}
	return !apiequality.Semantic.DeepEqual(o, c)
}

// AttachmentChanged: anything but its resourceVersion, managed fields,
// finalizers, annotations, attachment metadata and detach error: the
// attacher writes those, and a decision reads the spec, the deletion and
// whether (or with which error) it is attached.
func AttachmentChanged(old, cur *storagev1.VolumeAttachment) bool {
	o, c := *old, *cur
	o.ObjectMeta, c.ObjectMeta = trimmedMeta(old.ObjectMeta), trimmedMeta(cur.ObjectMeta)
	o.Annotations, c.Annotations = nil, nil
	o.Status.AttachmentMetadata, c.Status.AttachmentMetadata = nil, nil
	o.Status.DetachError, c.Status.DetachError = nil, nil
	return !apiequality.Semantic.DeepEqual(o, c)
}

// NodeChanged: what NodeOf reads of it, all a decision knows of a node.
func NodeChanged(old, cur *v1.Node) bool {
	all, volumes := NodeChange(old, cur)
	return all || len(volumes) > 0
}

// NodeChange says which decisions a node's change may alter: all of them
// (its name, readiness, managed annotation or out-of-service taint), or
// those about the volumes whose volumesInUse or volumesAttached entries
// came, went or changed.
func NodeChange(old, cur *v1.Node) (all bool, volumes []v1.UniqueVolumeName) {
	o, c := NodeOf(old.Name, old, nil), NodeOf(cur.Name, cur, nil)
	if o.Name != c.Name || o.Ready != c.Ready || o.Managed != c.Managed || o.OutOfService != c.OutOfService {
		return true, nil
	}
	changed := map[v1.UniqueVolumeName]bool{}
	inUseO, inUseC := set(o.VolumesInUse), set(c.VolumesInUse)
	for u := range inUseO {
		if !inUseC[u] {
			changed[u] = true
		}
	}
	for u := range inUseC {
		if !inUseO[u] {
			changed[u] = true
		}
	}
	attachedO := map[v1.AttachedVolume]bool{}
	for _, a := range o.VolumesAttached {
		attachedO[a] = true
	}
	attachedC := map[v1.AttachedVolume]bool{}
	for _, a := range c.VolumesAttached {
		attachedC[a] = true
		if !attachedO[a] {
			changed[a.Name] = true
		}
	}
	for a := range attachedO {
		if !attachedC[a] {
			changed[a.Name] = true
		}
	}
	return false, slices.Sorted(maps.Keys(changed))
}

// trimmedMeta is m without what its writers change and no decision reads.
func trimmedMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.ResourceVersion, m.ManagedFields, m.Finalizers = "", nil, nil
	return m
}
