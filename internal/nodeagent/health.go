package nodeagent

import (
	"context"
	"fmt"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/health"
	"github.com/volplane/volplane/internal/mounting"
)

// volumeHealthMemory is, per pod UID and volume name, the conditions last
// reported on the pod by event: a transition is news once.
type volumeHealthMemory struct {
	mu   sync.Mutex
	last map[string][]corev1.VolumeHealthCondition
}

func (m *volumeHealthMemory) swap(key string, now []corev1.VolumeHealthCondition, keep map[string]bool) []corev1.VolumeHealthCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string][]corev1.VolumeHealthCondition{}
	}
	before := m.last[key]
	m.last[key] = now
	keep[key] = true
	return before
}

// forget drops the pods' volumes of node no probe saw any more.
func (m *volumeHealthMemory) forget(node string, keep map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.last {
		if len(k) > len(node) && k[:len(node)+1] == node+"/" && !keep[k] {
			delete(m.last, k)
		}
	}
}

// probeHealth asks the node's services as the kubelet's volumehealth
// manager does (probeVolumeHealth, probeStorageHealth), over the world
// runVolumeProbes built.
func (a *Agent) probeHealth(ctx context.Context, n *nodeState, w mounting.World) {
	keep := map[string]bool{}
	for _, t := range w.HealthTargets(n.layout) {
		a.probeVolume(ctx, n, t, keep)
	}
	a.health.forget(n.name, keep)
	a.probeStorage(ctx, n, w)
}

// probeVolume asks one pod's volume and reports it. A failed answer leaves
// the last report as it was, as the kubelet does.
func (a *Agent) probeVolume(ctx context.Context, n *nodeState, t mounting.HealthTarget, keep map[string]bool) {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(t.Pod), "volume", t.Volume, "node", n.name)
	key := n.name + "/" + string(t.Pod.UID) + "/" + t.Volume
	e, err := n.endpoint(t.Driver)
	if err != nil {
		keep[key] = true
		return
	}
	h, err := e.NodeGetVolumeHealth(ctx, &csipb.NodeGetVolumeHealthRequest{
		VolumeId: t.Handle, StagingTargetPath: t.StagingPath, VolumePublishPath: t.PublishPath})
	if err != nil {
		keep[key] = true
		logger.V(4).Info("NodeGetVolumeHealth failed; leaving previous conditions unchanged", "err", err)
		return
	}
	now := health.VolumeConditions(h)
	pod, err := a.pods.Pods(t.Pod.Namespace).Get(t.Pod.Name)
	if err != nil || pod.UID != t.Pod.UID {
		return
	}
	d := health.DecidePod(health.PodInput{Pod: pod, Volume: t.Volume, Now: now,
		Before: a.health.swap(key, now, keep), WriteStatus: a.cfg.WriteHealth(),
		Time: metav1.NewTime(a.cfg.Clock.Now())})
	if d.Want != nil {
		if _, err := a.cfg.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, d.Want, metav1.UpdateOptions{}); err != nil {
			logger.V(2).Info("Write the pod's volume health", "err", err)
			a.health.swap(key, nil, keep) // the next probe writes it and tells again
			return
		}
	}
	if d.Event != nil {
		n.recorder.Event(pod, d.Event.Type, d.Event.Reason, fmt.Sprintf("Volume %s: %s", t.Volume, d.Event.Message))
	}
}

// probeStorage asks each driver with GET_STORAGE_HEALTH and, with the
// gate on, writes the driver's entry of the node's CSINode
// status.storageHealth as the kubelet does (UpdateCSINodeStorageHealth):
// other drivers' entries kept, none for a healthy driver, no write when
// the identities did not change.
func (a *Agent) probeStorage(ctx context.Context, n *nodeState, w mounting.World) {
	logger := klog.FromContext(ctx).WithValues("node", n.name)
	for name, drv := range w.Drivers {
		e, err := n.endpoint(name)
		if !drv.StorageHealth || err != nil {
			continue
		}
		entries, err := e.NodeGetStorageHealth(ctx)
		var conds []storagev1.StorageHealthCondition
		if err == nil {
			conds, err = health.StorageConditions(entries)
		}
		if err != nil {
			logger.V(4).Info("NodeGetStorageHealth failed; leaving previous conditions unchanged", "driver", name, "err", err)
			continue
		}
		a.storage.set(n.name, name, conds)
		if !a.cfg.WriteHealth() {
			continue
		}
		if err := a.writeStorageHealth(ctx, n.name, name, conds); err != nil {
			logger.Error(err, "Failed to update CSINode storage health", "driver", name)
		}
	}
}

// writeStorageHealth makes the driver's entry of the node's CSINode say
// conds, from a live read, writing only a change. A driver that stays
// healthy costs no read after the one that found (or left) no entry for
// it: only this agent writes the node's entries, and a CSINode made anew
// starts without any, which still agrees. Conditions are read back on
// every probe while they last.
func (a *Agent) writeStorageHealth(ctx context.Context, node, driver string, conds []storagev1.StorageHealthCondition) error {
	if len(conds) == 0 && a.storage.noEntry(node, driver) {
		return nil
	}
	// Forgotten before the read: a write that fails may still have landed.
	a.storage.setNoEntry(node, driver, false)
	csiNode, err := a.cfg.Client.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		a.storage.setNoEntry(node, driver, len(conds) == 0)
		return nil
	}
	if err != nil {
		return err
	}
	var have []storagev1.StorageHealthCondition
	others := make([]storagev1.StorageHealth, 0, len(csiNode.Status.StorageHealth))
	for _, h := range csiNode.Status.StorageHealth {
		if h.Name == driver {
			have = h.HealthConditions
		} else {
			others = append(others, h)
		}
	}
	if !health.StorageSetsEqual(have, conds) {
		if len(conds) > 0 {
			others = append(others, storagev1.StorageHealth{Name: driver, HealthConditions: conds})
		}
		csiNode.Status.StorageHealth = others
		if _, err := a.cfg.Client.StorageV1().CSINodes().UpdateStatus(ctx, csiNode, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	a.storage.setNoEntry(node, driver, len(conds) == 0)
	return nil
}

// storageHealthDesc is the kubelet's csi_node_storage_health_status
// (volumehealth/metrics.go), plus the node as the agent's stats carry it.
var storageHealthDesc = prometheus.NewDesc("csi_node_storage_health_status",
	"CSI node storage backend health conditions currently reported (1 = present).",
	[]string{"driver_name", "status", "reason", "node"}, nil)

// storageHealth is the last storage conditions per node and driver, and
// the "node/driver" pairs whose CSINode was last seen, or left, without an
// entry for the driver.
type storageHealth struct {
	mu      sync.Mutex
	byNode  map[string]map[string][]storagev1.StorageHealthCondition
	cleared map[string]bool
}

func (s *storageHealth) noEntry(node, driver string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cleared[node+"/"+driver]
}

func (s *storageHealth) setNoEntry(node, driver string, none bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !none {
		delete(s.cleared, node+"/"+driver)
		return
	}
	if s.cleared == nil {
		s.cleared = map[string]bool{}
	}
	s.cleared[node+"/"+driver] = true
}

func (s *storageHealth) set(node, driver string, conds []storagev1.StorageHealthCondition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byNode == nil {
		s.byNode = map[string]map[string][]storagev1.StorageHealthCondition{}
	}
	if s.byNode[node] == nil {
		s.byNode[node] = map[string][]storagev1.StorageHealthCondition{}
	}
	s.byNode[node][driver] = conds
}

func (s *storageHealth) Describe(ch chan<- *prometheus.Desc) { ch <- storageHealthDesc }

func (s *storageHealth) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for node, drivers := range s.byNode {
		for driver, conds := range drivers {
			for _, c := range conds {
				ch <- prometheus.MustNewConstMetric(storageHealthDesc, prometheus.GaugeValue, 1, driver, string(c.Status), c.Reason, node)
			}
		}
	}
}
