package health

import (
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func boundPair() (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-a"}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}},
		ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "a", UID: "uid-a"},
	}}
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-a"}}
	return pv, claim
}

var missing = []v1.VolumeHealthCondition{{Status: v1.VolumeHealthInaccessible, Reason: "DataMissing", Message: "gone"}}

func TestVolumeConditionsMapsAsTheKubelet(t *testing.T) {
	h := &csipb.VolumeHealth{VolumeId: "v", HealthStatuses: []*csipb.VolumeHealth_VolumeHealthEntry{
		{Status: csipb.VolumeHealthErrorType_INACCESSIBLE, Reason: "A"},
		{Status: csipb.VolumeHealthErrorType_UNKNOWN_VOLUME_HEALTH_TYPE, Reason: "B"},
		{Status: csipb.VolumeHealthErrorType_DATA_LOSS, Reason: "C"},
		{Status: csipb.VolumeHealthErrorType_DEGRADED, Reason: "D"},
	}}
	got := VolumeConditions(h)
	if len(got) != 3 || got[0].Status != v1.VolumeHealthInaccessible || got[1].Status != v1.VolumeHealthDataLoss || got[2].Status != v1.VolumeHealthDegraded {
		t.Errorf("conditions = %v, want the three known statuses, unknown dropped", got)
	}
	if VolumeConditions(nil) != nil || VolumeConditions(&csipb.VolumeHealth{VolumeId: "v"}) != nil {
		t.Error("no entries must be healthy (nil)")
	}
	many := make([]*csipb.NodeGetStorageHealthResponse_StorageBackendHealth, MaxConditions+1)
	if _, err := StorageConditions(many); err == nil {
		t.Error("more than 16 storage conditions must be an error, as the kubelet's")
	}
}

func TestSetsEqualIgnoresMessageAndOrder(t *testing.T) {
	a := []v1.VolumeHealthCondition{{Status: "Degraded", Reason: "X", Message: "1"}, {Status: "Inaccessible", Reason: "Y"}}
	b := []v1.VolumeHealthCondition{{Status: "Inaccessible", Reason: "Y", Message: "other"}, {Status: "Degraded", Reason: "X"}}
	if !SetsEqual(a, b) || SetsEqual(a, b[:1]) || !SetsEqual(nil, []v1.VolumeHealthCondition{}) {
		t.Error("SetsEqual must compare (status, reason) sets only")
	}
}

func TestDecideClaimTransitions(t *testing.T) {
	pv, claim := boundPair()
	now := metav1.Now()
	d := DecideClaim(ClaimInput{Volume: pv, Claim: claim, Now: missing, WriteStatus: true, Time: now})
	if d.Event == nil || d.Event.Reason != ReasonAbnormal || d.Event.Type != v1.EventTypeWarning {
		t.Fatalf("turning abnormal: event %v, want a Warning %s", d.Event, ReasonAbnormal)
	}
	if d.Want == nil || d.Want.Status.HealthStatus == nil || !SetsEqual(d.Want.Status.HealthStatus.HealthConditions, missing) {
		t.Fatalf("turning abnormal with the gate: want %v, want healthStatus set", d.Want)
	}
	claim = d.Want
	if d := DecideClaim(ClaimInput{Volume: pv, Claim: claim, Now: missing, Before: missing, WriteStatus: true}); d.Event != nil || d.Want != nil {
		t.Errorf("still abnormal: %+v, want nothing to do", d)
	}
	d = DecideClaim(ClaimInput{Volume: pv, Claim: claim, Before: missing, WriteStatus: true})
	if d.Event == nil || d.Event.Reason != ReasonNormal || d.Want == nil || d.Want.Status.HealthStatus != nil {
		t.Errorf("back to normal: %+v, want %s and healthStatus cleared", d, ReasonNormal)
	}
	d = DecideClaim(ClaimInput{Volume: pv, Claim: claim, Now: missing})
	if d.Want != nil {
		t.Errorf("gate off: want %v, want no status write", d.Want)
	}
}

// A claim's user controls its spec.volumeName and can create a claim of
// the name another volume's claimRef carries after the first went: neither
// brings that volume's health onto it.
func TestDecideClaimHostileClaims(t *testing.T) {
	pv, claim := boundPair()
	thief := claim.DeepCopy()
	thief.Name, thief.UID = "thief", "uid-thief"
	recreated := claim.DeepCopy()
	recreated.UID = "uid-new"
	elsewhere := claim.DeepCopy()
	elsewhere.Spec.VolumeName = "pv-other"
	for name, c := range map[string]*v1.PersistentVolumeClaim{"other claim": thief, "recreated": recreated, "volumeName elsewhere": elsewhere} {
		if d := DecideClaim(ClaimInput{Volume: pv, Claim: c, Now: missing, WriteStatus: true}); d.Skip != SkipNotTheClaims || d.Event != nil || d.Want != nil {
			t.Errorf("%s: %+v, want skipped as %s", name, d, SkipNotTheClaims)
		}
	}
}

func TestDecidePodAsTheKubelet(t *testing.T) {
	pod := &v1.Pod{}
	d := DecidePod(PodInput{Pod: pod, Volume: "data", WriteStatus: true})
	if d.Want != nil || d.Event != nil {
		t.Errorf("healthy, never reported: %+v, want nothing", d)
	}
	d = DecidePod(PodInput{Pod: pod, Volume: "data", Now: missing, WriteStatus: true})
	if d.Want == nil || len(d.Want.Status.VolumeHealth) != 1 || d.Event == nil || d.Event.Reason != ReasonAbnormal {
		t.Fatalf("abnormal: %+v, want an entry and an event", d)
	}
	d = DecidePod(PodInput{Pod: d.Want, Volume: "data", Before: missing, WriteStatus: true})
	if d.Want == nil || len(d.Want.Status.VolumeHealth) != 1 || len(d.Want.Status.VolumeHealth[0].HealthConditions) != 0 ||
		d.Event == nil || d.Event.Reason != ReasonNormal {
		t.Errorf("recovered: %+v, want the entry emptied and %s", d, ReasonNormal)
	}
}
