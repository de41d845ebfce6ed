package explain

import (
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/health"
)

// Health is the volume health reported on a claim: by the health-monitor's
// status.healthStatus (CSIVolumeHealth gate on), else by its latest
// VolumeConditionAbnormal / VolumeConditionNormal event.
type Health struct {
	// Abnormal: adverse conditions are reported now.
	Abnormal bool `json:"abnormal"`
	// Source is "status" or "event".
	Source string `json:"source"`
	// Summary is the conditions ("Inaccessible/DataMissing: ...") or the
	// recovery message.
	Summary string `json:"summary"`
}

// healthOf is the claim's reported health, nil when none was ever
// reported. Only the claim's own status and the events recorded on the
// claim itself are read.
func healthOf(claim *v1.PersistentVolumeClaim, f *Facts) *Health {
	if h := claim.Status.HealthStatus; h != nil && len(h.HealthConditions) > 0 {
		return &Health{Abnormal: true, Source: "status", Summary: health.Summary(h.HealthConditions)}
	}
	var last *v1.Event
	for _, e := range f.Events {
		if e.InvolvedObject.UID != claim.UID || (e.Reason != health.ReasonAbnormal && e.Reason != health.ReasonNormal) {
			continue
		}
		if last == nil || last.LastTimestamp.Before(&e.LastTimestamp) {
			last = e
		}
	}
	if last == nil {
		return nil
	}
	return &Health{Abnormal: last.Reason == health.ReasonAbnormal, Source: "event", Summary: last.Message}
}
