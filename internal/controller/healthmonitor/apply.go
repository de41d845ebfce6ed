package healthmonitor

import (
	"context"
	"maps"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/health"
)

// report decides and applies one volume's conditions on its claim.
func (m *Monitor) report(ctx context.Context, pv *v1.PersistentVolume, now []v1.VolumeHealthCondition) {
	logger := klog.FromContext(ctx).WithValues("pv", pv.Name)
	ref := pv.Spec.ClaimRef
	claim, err := m.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Read claim")
		return
	}
	if apierrors.IsNotFound(err) {
		claim = nil
	}
	writeStatus := m.cfg.WriteStatus()
	in := health.ClaimInput{Volume: pv, Claim: claim, Now: now, WriteStatus: writeStatus, Time: metav1.Now()}
	if claim != nil {
		in.Before = m.before(claim, writeStatus)
	}
	d := health.DecideClaim(in)
	if d.Skip != health.SkipNone {
		logger.V(4).Info("Volume health not reported", "reason", d.Skip)
		return
	}
	if d.Want != nil {
		if err := m.patchStatus(ctx, claim, d.Want); err != nil {
			logger.Error(err, "Write the claim's health status", "pvc", klog.KObj(claim))
			return // the next poll tries again; the event waits for it
		}
	}
	if d.Event != nil {
		m.cfg.Recorder(pv.Spec.CSI.Driver).Event(claim, d.Event.Type, d.Event.Reason, d.Event.Message)
	}
	m.remember(claim.UID, now)
}

// before is what was last reported on claim: the loop's memory, else,
// with the gate on, the claim's status (a restarted monitor).
func (m *Monitor) before(claim *v1.PersistentVolumeClaim, writeStatus bool) []v1.VolumeHealthCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.reported[claim.UID]; ok {
		return c
	}
	if writeStatus && claim.Status.HealthStatus != nil {
		return claim.Status.HealthStatus.HealthConditions
	}
	return nil
}

func (m *Monitor) remember(uid types.UID, now []v1.VolumeHealthCondition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reported[uid] = now
}

// forgetOthers drops the memory of claims no poll reported on.
func (m *Monitor) forgetOthers(seen map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.reported, func(uid types.UID, _ []v1.VolumeHealthCondition) bool { return !seen[uid] })
}

// patchStatus writes want's status.healthStatus through the claims' one
// home for status patches, failing on a claim changed meanwhile.
func (m *Monitor) patchStatus(ctx context.Context, old, want *v1.PersistentVolumeClaim) error {
	patch, err := claimstatus.Patch(old, want, claimstatus.IfUnchanged)
	if err != nil {
		return err
	}
	_, err = m.cfg.Client.CoreV1().PersistentVolumeClaims(old.Namespace).Patch(ctx, old.Name,
		types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}
