package bench

import (
	"context"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// The claim watch counts only the Bound claims of the bench namespace and
// wakes the waiters of a claim bound later.
func TestBindWatchCountsOnlyBoundClaims(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	claim := func(ns, name string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	client := fake.NewClientset(claim(benchNS, "bound", corev1.ClaimBound), claim(benchNS, "pending", corev1.ClaimPending),
		claim("other", "elsewhere", corev1.ClaimBound))
	w, err := startBindWatch(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.waitBound(ctx, "bound"); err != nil {
		t.Fatal(err)
	}
	if got := w.snapshot(); len(got) != 1 || got["bound"].IsZero() {
		t.Errorf("seen %v, want only bound", got)
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(benchNS).UpdateStatus(ctx, claim(benchNS, "pending", corev1.ClaimBound), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.waitBound(ctx, "pending"); err != nil {
		t.Fatal(err)
	}
	if n := w.count(); n != 2 {
		t.Errorf("count = %d, want 2", n)
	}
}

// What each watch counts as done.
func TestWatchPredicates(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "x", Namespace: benchNS}
	for _, tc := range []struct {
		name string
		done func(any) (string, bool)
		obj  any
		want bool
	}{
		{"bound claim", claimBound, &corev1.PersistentVolumeClaim{ObjectMeta: meta, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}, true},
		{"pending claim", claimBound, &corev1.PersistentVolumeClaim{ObjectMeta: meta}, false},
		{"not a claim", claimBound, &snapv1.VolumeSnapshot{ObjectMeta: meta}, false},
		{"ready snapshot", snapshotReady, &snapv1.VolumeSnapshot{ObjectMeta: meta, Status: &snapv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true)}}, true},
		{"snapshot not ready", snapshotReady, &snapv1.VolumeSnapshot{ObjectMeta: meta, Status: &snapv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(false)}}, false},
		{"snapshot with no status", snapshotReady, &snapv1.VolumeSnapshot{ObjectMeta: meta}, false},
		{"not a snapshot", snapshotReady, &corev1.PersistentVolumeClaim{ObjectMeta: meta}, false},
	} {
		name, done := tc.done(tc.obj)
		if done != tc.want || (done && name != "x") {
			t.Errorf("%s: (%q, %v), want done %v", tc.name, name, done, tc.want)
		}
	}
}
