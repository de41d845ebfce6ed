package doctor

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/health"
)

// KindVolumeUnhealthy: the driver reports a volume's health abnormal
// (ControllerListVolumeHealth), or its claim's status.healthStatus holds
// conditions (the health-monitor writes it under the CSIVolumeHealth gate).
const KindVolumeUnhealthy Kind = "volume-unhealthy"

// unhealthyVolumes finds the CSI volumes with adverse health conditions:
// those a listed driver reports now, else those their bound claim's
// status holds. A claim's status counts only for the volume whose
// claimRef names it (boundClaim): a claim cannot make another tenant's
// volume look unhealthy.
func unhealthyVolumes(s *Snapshot) []Finding {
	var out []Finding
	for _, pv := range s.Volumes {
		csi := pv.Spec.CSI
		if csi == nil || pv.DeletionTimestamp != nil {
			continue
		}
		claim := boundClaim(s, pv)
		conds, source := backendHealth(s, pv), "driver "+csi.Driver+" reports"
		if conds == nil && claim != nil && claim.Spec.VolumeName == pv.Name && claim.Status.HealthStatus != nil {
			conds, source = claim.Status.HealthStatus.HealthConditions, "the claim's status.healthStatus says"
		}
		if len(conds) == 0 {
			continue
		}
		out = append(out, unhealthyFinding(pv, claim, conds, source))
	}
	return out
}

// backendHealth is what a listed endpoint of the PV's driver reports of
// its volume: the conditions of the first endpoint holding it that lists
// health, nil when none does or the volume is healthy.
func backendHealth(s *Snapshot, pv *v1.PersistentVolume) []v1.VolumeHealthCondition {
	for _, b := range s.Backends {
		if b.Driver != pv.Spec.CSI.Driver || b.Health == nil {
			continue
		}
		if c := b.Health[pv.Spec.CSI.VolumeHandle]; len(c) > 0 {
			return c
		}
	}
	return nil
}

func unhealthyFinding(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim, conds []v1.VolumeHealthCondition, source string) Finding {
	f := Finding{Kind: KindVolumeUnhealthy, Severity: SeverityProblem, Object: volumeObject(pv.Name),
		Problem: fmt.Sprintf("Its volume %s is unhealthy: %s %s.", pv.Spec.CSI.VolumeHandle, source, health.Summary(conds))}
	if claim != nil {
		f.Object = claimObject(claim)
		f.Problem = fmt.Sprintf("Volume %s of the claim is unhealthy: %s %s.", pv.Name, source, health.Summary(conds))
		f.Fixes = append(f.Fixes, Fix{Says: "see the claim's health events (VolumeConditionAbnormal) and the pods using it",
			Command: fmt.Sprintf("kubectl get events -n %s --field-selector involvedObject.name=%s", claim.Namespace, claim.Name)})
	}
	f.Fixes = append(f.Fixes, Fix{Says: fmt.Sprintf("check driver %s's storage of volume %s: restore its data (from a VolumeSnapshot or a backup) or free space; the report clears by itself once the driver reports it healthy", pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle),
		Command: "volplane explain pv " + pv.Name})
	return f
}
