package explain

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/health"
)

func TestClaimHealthFromStatusThenLatestEvent(t *testing.T) {
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "uid-c"}}
	ev := func(uid, reason, msg string, sec int64) *v1.Event {
		return &v1.Event{InvolvedObject: v1.ObjectReference{UID: types.UID("uid-" + uid)}, Reason: reason, Message: msg,
			LastTimestamp: metav1.Unix(sec, 0)}
	}
	if h := healthOf(claim, &Facts{}); h != nil {
		t.Errorf("no report: %+v, want nil", h)
	}
	f := &Facts{Events: []*v1.Event{ev("c", health.ReasonAbnormal, "Inaccessible/DataMissing: gone", 1),
		ev("c", health.ReasonNormal, health.RecoveredMessage, 2), ev("other", health.ReasonAbnormal, "not mine", 3)}}
	if h := healthOf(claim, f); h == nil || h.Abnormal || h.Source != "event" {
		t.Errorf("recovered: %+v, want the latest own event, normal", h)
	}
	f.Events = f.Events[:1]
	if h := healthOf(claim, f); h == nil || !h.Abnormal || !strings.Contains(h.Summary, "DataMissing") {
		t.Errorf("abnormal: %+v, want the abnormal event", h)
	}
	claim.Status.HealthStatus = &v1.VolumeHealthStatus{HealthConditions: []v1.VolumeHealthCondition{{Status: v1.VolumeHealthDegraded, Reason: "OverCapacity"}}}
	if h := healthOf(claim, &Facts{}); h == nil || h.Source != "status" || h.Summary != "Degraded/OverCapacity" {
		t.Errorf("status: %+v, want Degraded/OverCapacity from the status", h)
	}
}
