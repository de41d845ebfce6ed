package provisioner

import (
	"context"
	"errors"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/provisioning"
)

// errNoSnapshotAPI: the provisioner was built without a snapshot client.
var errNoSnapshotAPI = errors.New("the provisioner has no client of the snapshot API")

// readSnapshot reads the claim's data source snapshot ns/name and the
// content it is bound to, live from the API server as the
// external-provisioner does: a restore must not start from a copy that
// an informer has not brought up to date (a snapshot being deleted, a
// content rebound).
func (c *Controller) readSnapshot(ctx context.Context, ns, name string) provisioning.SnapshotRead {
	r := provisioning.SnapshotRead{Name: name}
	if c.snapshots == nil {
		r.SnapshotErr = errNoSnapshotAPI
		return r
	}
	r.Snapshot, r.SnapshotErr = c.snapshots.SnapshotV1().VolumeSnapshots(ns).Get(ctx, name, metav1.GetOptions{})
	if r.SnapshotErr != nil {
		r.Snapshot = nil
		return r
	}
	if bound := provisioning.BoundContent(r.Snapshot); bound != "" {
		r.Content, r.ContentErr = c.snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, bound, metav1.GetOptions{})
		if r.ContentErr != nil {
			r.Content = nil
		}
	}
	return r
}

// snapshotAt says where the snapshot handle lives, for a driver whose
// volumes live in topology segments (nil: anywhere). A node-local
// snapshot lives where its source volume lives: the node affinity of the
// source volume's PV while that PV exists (content.spec.source.volumeHandle),
// else the one endpoint whose ListSnapshots(snapshot_id) returns it (a
// pre-provisioned content names no source volume; a source PV may be gone).
func (c *Controller) snapshotAt(ctx context.Context, info csi.Info, content *snapv1.VolumeSnapshotContent, handle string) (func(map[string]string) bool, error) {
	driver := info.Driver
	if !info.Accessibility || len(c.pool.TopologyKeys(driver)) == 0 {
		return nil, nil
	}
	if vh := provisioning.SnapshotSourceHandle(content); vh != "" {
		if pv := c.volumeByHandle(driver, vh); pv != nil {
			return provisioning.AccessibleFrom(pv), nil
		}
	}
	eps := c.pool.Endpoints(driver)
	has := make([]bool, len(eps))
	for i, e := range eps {
		if !e.Info.ListSnapshots {
			continue
		}
		snaps, err := e.ListSnapshots(ctx, &csipb.ListSnapshotsRequest{SnapshotId: handle})
		if err != nil {
			return nil, err
		}
		for _, s := range snaps {
			has[i] = has[i] || s.GetSnapshotId() == handle
		}
	}
	i, err := provisioning.SnapshotHolder(handle, endpointsOf(eps), has)
	if err != nil {
		return nil, err
	}
	return provisioning.SegmentIs(eps[i].Info.Topology), nil
}

// volumeByHandle is driver's PV of volume handle h, nil if none.
func (c *Controller) volumeByHandle(driver, h string) *v1.PersistentVolume {
	pvs, _ := c.read.pvs.List(labels.Everything())
	for _, pv := range pvs {
		if s := pv.Spec.CSI; s != nil && s.Driver == driver && s.VolumeHandle == h {
			return pv
		}
	}
	return nil
}
