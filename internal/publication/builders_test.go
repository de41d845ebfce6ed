package publication

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
)

// Builders with defaults: driver d.csi.test, PV pv1 (handle vol-1, RWO,
// filesystem ext4), node node1 whose driver ID is id-1, attachment va1.
const (
	drv    = "d.csi.test"
	node   = "node1"
	nodeID = "id-1"
)

var fin = attachment.Finalizer(drv)

func pv(mods ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: v1.PersistentVolumeSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
			Driver: drv, VolumeHandle: "vol-1", FSType: "ext4", VolumeAttributes: map[string]string{"k": "v"}}},
	}}
	for _, m := range mods {
		m(p)
	}
	return p
}

func pvProtected(p *v1.PersistentVolume) { p.Finalizers = append(p.Finalizers, fin) }
func pvDeleting(p *v1.PersistentVolume)  { p.DeletionTimestamp = &metav1.Time{} }

func va(mods ...func(*storagev1.VolumeAttachment)) *storagev1.VolumeAttachment {
	a := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va1"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: drv, NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv1")}}}
	for _, m := range mods {
		m(a)
	}
	return a
}

func annotated(a *storagev1.VolumeAttachment) {
	a.Finalizers = append(a.Finalizers, fin)
	metav1.SetMetaDataAnnotation(&a.ObjectMeta, attachment.NodeIDAnnotation, nodeID)
}
func attached(a *storagev1.VolumeAttachment)   { a.Status.Attached = true }
func vaDeleting(a *storagev1.VolumeAttachment) { a.DeletionTimestamp = &metav1.Time{} }

func csiNode(drivers ...string) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}}
	for _, d := range drivers {
		n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: nodeID})
	}
	return n
}

var publishing = Capabilities{Publish: true}
