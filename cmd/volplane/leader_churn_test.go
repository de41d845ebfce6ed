package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/invariants"
)

// Two replicas of each role (binder and protection; provisioner, attacher,
// resizer, attach/detach and expander), a role's leader SIGKILLed between
// operations, seven times in all, while claims of every bundled class are
// created and used by pods, then grown and deleted: every claim ends Bound to one
// PV, every pod runs, every expansion is done on the node, every deleted
// claim's volume is gone from the API and the backend, and no invariant
// is broken.
func TestLeaderElectionUnderChurn(t *testing.T) {
	h := startHarness(t, "")
	h.startReplicas(2)
	w := newWorkload(h.client, "unix://"+filepath.Join(h.dir, "csi", "network.sock"), 100)
	ctx := context.Background()

	kills := 0
	killLeader := func(role string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if r := h.leader(ctx, role); r != nil && r.kill() {
				kills++
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("no replica of %s took the Lease within 30s", role)
	}
	bind, csi := soakRoles[0].name, soakRoles[1].name

	classes := []string{bundle.ImmediateClass, bundle.WaitClass, bundle.NetworkClass}
	var names []string
	for i := range 12 {
		switch i {
		case 4:
			killLeader(csi)
		case 8:
			killLeader(bind)
		}
		name := fmt.Sprintf("c%d", i)
		names = append(names, name)
		createUsedClaim(t, w, name, classes[i%len(classes)])
	}
	killLeader(csi)
	requireQuiescent(t, h, "after creating 12 claims with pods")

	claims := map[string]corev1.PersistentVolumeClaim{}
	list, err := h.client.CoreV1().PersistentVolumeClaims(soakNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		claims[c.Name] = c
	}
	for i, name := range names[:6] {
		if i == 3 {
			killLeader(csi)
		}
		if err := w.expand(ctx, claims[name]); err != nil {
			t.Fatalf("growing %s: %v", name, err)
		}
	}
	for i, name := range names[6:10] {
		if i == 2 {
			killLeader(bind)
		}
		if err := w.deleteClaim(ctx, claims[name]); err != nil {
			t.Fatalf("deleting %s: %v", name, err)
		}
	}
	killLeader(csi)
	for i := range 3 {
		createUsedClaim(t, w, fmt.Sprintf("n%d", i), classes[i])
	}
	killLeader(bind)
	requireQuiescent(t, h, "after growing 6 claims, deleting 4 and creating 3")

	state, err := checkup.ReadInvariants(ctx, h.client, h.endpoints())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range invariants.Check(state, w.expect()) {
		t.Errorf("violation: %s", v)
	}
	t.Logf("%d leaders SIGKILLed; at the end %s", kills, describeState(state))
	if err := deleteAllPods(ctx, h.client, time.Minute); err != nil {
		t.Error(err)
	}
}

func createUsedClaim(t *testing.T, w *workload, name, class string) {
	t.Helper()
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: gi}},
		},
	}
	if _, err := w.client.CoreV1().PersistentVolumeClaims(soakNamespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.client.CoreV1().Pods(soakNamespace).Create(ctx, soakPod("p-"+name, name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func requireQuiescent(t *testing.T, h *soakHarness, when string) {
	t.Helper()
	if left := waitQuiescent(context.Background(), h.client, nil, 90*time.Second); len(left) > 0 {
		t.Fatalf("%s, work left undone: %q", when, left)
	}
}
