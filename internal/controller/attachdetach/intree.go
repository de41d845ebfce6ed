package attachdetach

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/volplane/volplane/internal/attachment"
)

// Reads for the volumes that are not CSI PersistentVolumes: the pods'
// inline volumes (a migrated one attaches as its CSI driver, with the
// translated spec in the attachment) and the in-tree volumes attached
// with no attachment (iscsi, fc), which only the nodes' volumesAttached
// show. Both are rare, so they are found by a scan of the store, made only
// when the node's pods have such a volume.

// readInline adds the drivers of the pod's migrated inline volumes, and
// the attachments of those volumes on any node (an inline attachment
// names no PV, so the PV index cannot find it).
func (c *Controller) readInline(f *attachment.Facts, pod *v1.Pod, add func(*storagev1.VolumeAttachment)) {
	var inline []attachment.Volume
	for _, v := range attachment.InlineVolumes(pod) {
		if v.Kind != attachment.KindMigrated {
			continue
		}
		inline = append(inline, v)
		if d, err := c.drivers.Get(v.Driver); err == nil {
			f.Drivers[d.Name] = d
		}
	}
	if len(inline) == 0 {
		return
	}
	for _, obj := range c.vas.List() {
		va, ok := obj.(*storagev1.VolumeAttachment)
		if !ok || va.Spec.Source.InlineVolumeSpec == nil || va.Spec.Source.InlineVolumeSpec.CSI == nil {
			continue
		}
		csi := va.Spec.Source.InlineVolumeSpec.CSI
		if slices.ContainsFunc(inline, func(v attachment.Volume) bool { return v.Driver == csi.Driver && v.Handle == csi.VolumeHandle }) {
			add(va)
		}
	}
}

// inTreeElsewhere fills Facts.InTreeElsewhere: for each in-tree volume
// (attachment.KindInTree) of the node's pods, through a PV or inline, the
// other nodes whose volumesAttached list it. It is non-nil exactly when the
// node's pods use such a volume. A node's list is the newer of the cache's
// and our last patch's (newestNode): the informer may not show yet what
// another node's sync just reported.
func (c *Controller) inTreeElsewhere(f *attachment.Facts) {
	wanted := map[v1.UniqueVolumeName]bool{}
	for _, pv := range f.Volumes {
		if v, ok, _ := attachment.FromPV(pv); ok && v.Kind == attachment.KindInTree {
			wanted[v.Unique] = true
		}
	}
	for _, pod := range f.Pods {
		for _, v := range attachment.InlineVolumes(pod) {
			if v.Kind == attachment.KindInTree {
				wanted[v.Unique] = true
			}
		}
	}
	if len(wanted) == 0 {
		return
	}
	nodes, _ := c.nodes.List(labels.Everything())
	f.InTreeElsewhere = map[v1.UniqueVolumeName][]string{}
	for _, n := range nodes {
		if n.Name == f.Node.Name {
			continue
		}
		n = c.newestNode.Newer(n.Name, n)
		for _, a := range n.Status.VolumesAttached {
			if wanted[a.Name] {
				f.InTreeElsewhere[a.Name] = append(f.InTreeElsewhere[a.Name], n.Name)
			}
		}
	}
}
