package nodeagent

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

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
	node, err := a.nodeList.Get(n.name)
	if apierrors.IsNotFound(err) {
		node = &corev1.Node{}
	} else if err != nil {
		return mounting.World{}, fmt.Errorf("node %s: %w", n.name, err)
	}
	disk, err := scan(n.layout)
	if err != nil {
		return mounting.World{}, fmt.Errorf("node %s: %w", n.name, err)
	}
	pods, err := informerindex.PodsOn(a.podIndex, n.name)
	if err != nil {
		return mounting.World{}, fmt.Errorf("node %s: %w", n.name, err)
	}
	w := mounting.World{Node: n.name, Registered: node.Name != "", NodeLabels: node.Labels, Pods: pods, Reported: node.Status.VolumesInUse,
		Attached: mounting.AttachedTo(node),
		Claims:   map[string]*corev1.PersistentVolumeClaim{}, Volumes: map[string]*corev1.PersistentVolume{},
		CSIDrivers: map[string]*storagev1.CSIDriver{}, Drivers: map[string]mounting.Driver{},
		Attachments: map[string]*storagev1.VolumeAttachment{},
		Staged:      disk.staged, Published: disk.published, PodDirs: disk.podDirs}
	for name, e := range n.endpoints {
		info, err := e.NodeCapabilities(ctx)
		if err != nil {
			return mounting.World{}, fmt.Errorf("node %s: NodeGetCapabilities of driver %s: %w", n.name, name, err)
		}
		w.Drivers[name] = mounting.Driver{Stage: info.Stage, Expand: info.Expand,
			SingleNodeMultiWriter: info.NodeSingleNodeMultiWriter, MountGroup: info.VolumeMountGroup,
			Stats: info.VolumeStats, VolumeHealth: info.NodeVolumeHealth, StorageHealth: info.StorageHealth}
	}
	if err := a.addObjects(&w); err != nil {
		return w, err
	}
	a.nameStaged(&w)
	return w, nil
}

// nameStaged finds the PV of each filesystem staging, whose record holds
// only the kubelet's driverName and volumeHandle: a publication of the
// volume names it, else the PV with that handle; a staging of no PV left
// is named by its handle (the name is only in logs and errors).
func (a *Agent) nameStaged(w *mounting.World) {
	var all []*corev1.PersistentVolume
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
		if all == nil {
			all, _ = a.volumes.List(labels.Everything())
		}
		s.PV = s.Handle
		for _, pv := range all {
			if src := pv.Spec.CSI; src != nil && src.Driver == s.Driver && src.VolumeHandle == s.Handle {
				s.PV = pv.Name
				break
			}
		}
	}
}

// addObjects adds the claims and volumes the node's pods use, the CSI
// drivers, and the node's attachments.
func (a *Agent) addObjects(w *mounting.World) error {
	for _, pod := range w.Pods {
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
	drivers, _ := a.drivers.List(labels.Everything())
	for _, d := range drivers {
		w.CSIDrivers[d.Name] = d
	}
	vas, err := informerindex.AttachmentsOn(a.vaIndex, w.Node)
	if err != nil {
		return fmt.Errorf("node %s: %w", w.Node, err)
	}
	for _, va := range vas {
		w.Attachments[va.Name] = va
	}
	return nil
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
