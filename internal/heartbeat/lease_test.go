package heartbeat

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
)

func TestRenewalWritesTheBeatAndKeepsTheRest(t *testing.T) {
	b := Beat{Namespace: "volplane", Driver: driver, Node: "node-1", Identity: "volplane-node-x", Duration: 1500 * time.Millisecond}
	first := Renewal(nil, b, now)
	if first.Namespace != "volplane" || first.Name != "volplane-provisioner-hostpath.csi.volplane.io--node-1" {
		t.Errorf("new Lease %s/%s", first.Namespace, first.Name)
	}
	if first.Labels[LabelProvisioner] != driver || first.Annotations[AnnotationProvisioner] != driver || first.Annotations[AnnotationNode] != "node-1" {
		t.Errorf("labels %v, annotations %v", first.Labels, first.Annotations)
	}
	if *first.Spec.HolderIdentity != "volplane-node-x" || !first.Spec.AcquireTime.Time.Equal(now) || !first.Spec.RenewTime.Time.Equal(now) ||
		*first.Spec.LeaseDurationSeconds != 2 || first.Spec.LeaseTransitions != nil {
		t.Errorf("new Lease spec %+v, want held by volplane-node-x since now, 2s (1.5s rounded up)", first.Spec)
	}

	// Renewed by the same holder: only the renewal time moves; what others
	// wrote on it stays.
	first.Labels["team"] = "storage"
	later := now.Add(10 * time.Second)
	again := Renewal(first, b, later)
	if !again.Spec.AcquireTime.Time.Equal(now) || !again.Spec.RenewTime.Time.Equal(later) || again.Spec.LeaseTransitions != nil {
		t.Errorf("renewed spec %+v", again.Spec)
	}
	if again.Labels["team"] != "storage" {
		t.Errorf("labels %v: another writer's label lost", again.Labels)
	}
	if !first.Spec.RenewTime.Time.Equal(now) {
		t.Error("Renewal modified the Lease it was given")
	}

	// Taken over by another process: a transition, acquired now.
	b.Identity = "volplane-node-y"
	taken := Renewal(again, b, later.Add(time.Second))
	if *taken.Spec.HolderIdentity != "volplane-node-y" || !taken.Spec.AcquireTime.Time.Equal(later.Add(time.Second)) ||
		ptr.Deref(taken.Spec.LeaseTransitions, 0) != 1 {
		t.Errorf("taken over: %+v", taken.Spec)
	}
}

func TestRenewalOfTheCentralModeHasNoNode(t *testing.T) {
	l := Renewal(&coordinationv1.Lease{}, Beat{Namespace: "kube-system", Driver: driver, Identity: "x", Duration: time.Minute}, now)
	if _, ok := l.Annotations[AnnotationNode]; ok {
		t.Errorf("annotations %v", l.Annotations)
	}
	if *l.Spec.LeaseDurationSeconds != 60 {
		t.Errorf("duration %d", *l.Spec.LeaseDurationSeconds)
	}
}
