package nodeagent

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/mounting"
	"github.com/volplane/volplane/internal/protection"
)

// world gathers what the node's decision rests on: the informers' objects,
// what the node's disk holds, and the node services' capabilities, asked
// again each time as the kubelet asks before each decision (a driver that
// does not answer fails the sync, retried). The pure core reads the
// objects only.
func (a *Agent) world(ctx context.Context, n *nodeState) (mounting.World, error) {
	w, err := a.nodeWorld(ctx, n)
	if err != nil {
		return w, err
	}
	disk, err := scan(n.layout)
	if err != nil {
		return mounting.World{}, fmt.Errorf("node %s: %w", n.name, err)
	}
	w.Staged, w.Published, w.PodDirs = disk.staged, disk.published, disk.podDirs
	if w.Pods, err = informerindex.PodsOn(a.podIndex, n.name); err != nil {
		return mounting.World{}, fmt.Errorf("node %s: %w", n.name, err)
	}
	for _, pod := range w.Pods {
		a.addClaims(&w, pod)
	}
	vas, err := informerindex.AttachmentsOn(a.vaIndex, w.Node)
	if err != nil {
		return w, fmt.Errorf("node %s: %w", w.Node, err)
	}
	for _, va := range vas {
		w.Attachments[va.Name] = va
	}
	a.nameStaged(&w)
	return w, nil
}

// podWorld is the world narrowed to one pod's sync (mounting.World.ForPod):
// the node, the pod with its claims and volumes, and only the records its
// plan reads (mounting.RecordsOf): its volumes' stagings and attachments
// and its own publications, read one by one, so a pod sync costs the same
// on a node of ten pods and of a thousand.
func (a *Agent) podWorld(ctx context.Context, n *nodeState, pod *corev1.Pod) (mounting.World, error) {
	w, err := a.nodeWorld(ctx, n)
	if err != nil {
		return w, err
	}
	w.Pods = []*corev1.Pod{pod}
	a.addClaims(&w, pod)
	r := mounting.RecordsOf(w, pod)
	var d onDisk
	for _, ref := range r.Stagings {
		dir, _ := n.layout.StagePaths(ref.Block, ref.Driver, ref.Handle, ref.PV)
		data, ok, err := readVolData(dir)
		if err != nil {
			return w, fmt.Errorf("node %s: %w", n.name, err)
		}
		if ok {
			s := data.Staged(ref.Block)
			if s.PV == "" {
				s.PV = ref.PV
			}
			d.staged = append(d.staged, s)
		}
	}
	if r.AllPublications {
		err = scanPods(n.layout, &d)
	} else {
		err = scanPod(n.layout, pod.UID, &d)
	}
	if err != nil {
		return w, fmt.Errorf("node %s: %w", n.name, err)
	}
	w.Staged, w.Published = d.staged, d.published
	for _, name := range r.Attachments {
		obj, ok, err := a.vaIndex.GetByKey(name)
		if err != nil {
			return w, fmt.Errorf("node %s: %w", n.name, err)
		}
		if va, _ := obj.(*storagev1.VolumeAttachment); ok && va != nil && va.Spec.NodeName == n.name {
			w.Attachments[name] = va
		}
	}
	return w, nil
}

// nodeWorld is the part of the world every decision of the node reads:
// the Node, the CSI drivers and the node services' capabilities; no pod,
// no record.
func (a *Agent) nodeWorld(ctx context.Context, n *nodeState) (mounting.World, error) {
	node, err := a.nodeList.Get(n.name)
	if apierrors.IsNotFound(err) {
		node = &corev1.Node{}
	} else if err != nil {
		return mounting.World{}, fmt.Errorf("node %s: %w", n.name, err)
	}
	w := mounting.World{Node: n.name, Registered: node.Name != "", NodeLabels: node.Labels, Reported: node.Status.VolumesInUse,
		Attached: n.attachedTo(node),
		Claims:   map[string]*corev1.PersistentVolumeClaim{}, Volumes: map[string]*corev1.PersistentVolume{},
		CSIDrivers: map[string]*storagev1.CSIDriver{}, Drivers: map[string]mounting.Driver{},
		Attachments: map[string]*storagev1.VolumeAttachment{}}
	for name, e := range n.endpoints {
		info, err := e.NodeCapabilities(ctx)
		if err != nil {
			return mounting.World{}, fmt.Errorf("node %s: NodeGetCapabilities of driver %s: %w", n.name, name, err)
		}
		w.Drivers[name] = mounting.Driver{Stage: info.Stage, Expand: info.Expand,
			SingleNodeMultiWriter: info.NodeSingleNodeMultiWriter, MountGroup: info.VolumeMountGroup,
			Stats: info.VolumeStats, VolumeHealth: info.NodeVolumeHealth, StorageHealth: info.StorageHealth}
	}
	drivers, _ := a.drivers.List(labels.Everything())
	for _, d := range drivers {
		w.CSIDrivers[d.Name] = d
	}
	return w, nil
}

// nameStaged finds the PV of each filesystem staging, whose record holds
// only the kubelet's driverName and volumeHandle: a publication of the
// volume names it, else the CSI PV with that handle (the least name, if
// several), read from the PVs indexed by unique volume name; a staging of
// no PV left is named by its handle (the name is only in logs and errors).
func (a *Agent) nameStaged(w *mounting.World) {
	for i := range w.Staged {
		s := &w.Staged[i]
		if s.PV != "" {
			continue
		}
		for _, p := range w.Published {
			if p.Driver == s.Driver && p.Handle == s.Handle {
				s.PV = p.PV
				break
			}
		}
		if s.PV != "" {
			continue
		}
		s.PV = s.Handle
		pvs, _ := informerindex.PVsOf(a.pvIndex, attachment.UniqueVolumeName(s.Driver, s.Handle))
		named := ""
		for _, pv := range pvs {
			if src := pv.Spec.CSI; src != nil && src.Driver == s.Driver && src.VolumeHandle == s.Handle && (named == "" || pv.Name < named) {
				named = pv.Name
			}
		}
		if named != "" {
			s.PV = named
		}
	}
}

// addClaims adds the claims the pod uses and their volumes.
func (a *Agent) addClaims(w *mounting.World, pod *corev1.Pod) {
	for _, key := range protection.ClaimKeys(pod) {
		obj, ok := a.claimByKey(key)
		if !ok {
			continue
		}
		w.Claims[key] = obj
		if pv, err := a.volumes.Get(obj.Spec.VolumeName); err == nil {
			w.Volumes[pv.Name] = pv
		}
	}
}

// claimByKey reads the claim "namespace/name" from the informer.
func (a *Agent) claimByKey(key string) (*corev1.PersistentVolumeClaim, bool) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return nil, false
	}
	c, err := a.claims.PersistentVolumeClaims(ns).Get(name)
	return c, err == nil
}

// attachedTo is mounting.AttachedTo of the node, made once per Node object
// the informer delivers (which nobody modifies), not once per sync: a node
// of a thousand attachments would otherwise build a map of a thousand per
// pod sync.
func (n *nodeState) attachedTo(node *corev1.Node) map[corev1.UniqueVolumeName]bool {
	if last := n.attached.Load(); last != nil && last.node == node {
		return last.set
	}
	set := mounting.AttachedTo(node)
	n.attached.Store(&attachedSet{node: node, set: set})
	return set
}

// attachedSet is the attached set of one Node object.
type attachedSet struct {
	node *corev1.Node
	set  map[corev1.UniqueVolumeName]bool
}
