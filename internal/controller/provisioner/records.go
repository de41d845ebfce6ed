package provisioner

import (
	"context"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/volplane/volplane/internal/provisioning"
)

// recordFacts reads what a recorded request is checked against
// (provisioning.WhyNotOurs): the claim, its class (nil if gone) and its data
// source give now.
func (c *Controller) recordFacts(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string) provisioning.RecordFacts {
	f := provisioning.RecordFacts{Name: provisioning.VolumeName(claim)}
	kind, name, err := provisioning.ClaimSource(claim)
	switch {
	case err != nil:
		f.SourceErr = err
	case kind == provisioning.CloneSource:
		var pv *v1.PersistentVolume
		if pv, f.SourceErr = c.boundSource(claim, name, driver); f.SourceErr == nil {
			f.Source = pv.Spec.CSI.VolumeHandle
		}
	case kind == provisioning.SnapshotSource:
		// Re-derived from the snapshot and its bound content, never
		// taken from the record: a content is not the user's to write.
		className := ""
		if class != nil {
			className = class.Name
		}
		f.Snapshot, f.SourceErr = provisioning.SnapshotHandle(c.readSnapshot(ctx, claim.Namespace, name), className, driver)
	}
	if f.SourceErr != nil && kind == provisioning.CloneSource {
		f.FormerSources = c.handlesBoundTo(claim.Namespace, name, driver)
	}
	if class != nil && provisioning.ProvisionsFor(class, driver) {
		if params, err := provisioning.DriverParameters(class.Parameters); err == nil {
			f.ClassKnown, f.Params = true, params
		}
	}
	info, _ := c.pool.Info(driver)
	if m, err := c.mutableParameters(claim, info); err == nil {
		f.MutableKnown, f.Mutable = true, m
	}
	return f
}

// handlesBoundTo are the volume handles of driver's PVs whose claimRef
// names the claim ns/name (whatever its UID: that claim may be gone).
func (c *Controller) handlesBoundTo(ns, name, driver string) []string {
	pvs, _ := c.read.pvs.List(labels.Everything())
	var out []string
	for _, pv := range pvs {
		ref := pv.Spec.ClaimRef
		if ref != nil && ref.Namespace == ns && ref.Name == name && pv.Spec.CSI != nil && pv.Spec.CSI.Driver == driver {
			out = append(out, pv.Spec.CSI.VolumeHandle)
		}
	}
	return out
}
