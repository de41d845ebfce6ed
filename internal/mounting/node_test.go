package mounting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/attachment"
)

// What the node sync writes after its teardown.
func TestNodeActionReportsFirstThenFinishes(t *testing.T) {
	u := attachment.UniqueVolumeName(network, "h-1")
	registered := func(w *World) { w.Registered = true }
	reports := func(names ...corev1.UniqueVolumeName) func(*World) { return func(w *World) { w.Reported = names } }
	for _, tc := range []struct {
		name string
		w    World
		want NodeAction
	}{
		{"no Node object", world(network, withPods(pod(podUID, "data"))), Unregistered},
		{"volume wanted, not reported", world(network, registered, withPods(pod(podUID, "data"))), ReportInUse},
		{"reported as wanted", world(network, registered, reports(u), withPods(pod(podUID, "data"))), UpToDate},
		{"reported, no longer used", world(network, registered, reports(u)), ReportInUse},
		{"nothing used, nothing reported", world(local, registered, withPods(pod(podUID, "data"))), UpToDate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.w).Node; got != tc.want {
				t.Errorf("Node = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTearsDownWhenAnythingIsLeft(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    World
		want bool
	}{
		{"live pod using its volume", world(local, withPods(pod(podUID, "data")), staged(local, true), published(podUID, local, true)), false},
		{"publication of a gone pod", world(local, staged(local, true), published(podUID, local, true)), true},
		{"staging nobody needs", world(local, staged(local, true)), true},
		{"empty directory of a gone pod", world(local, func(w *World) { w.PodDirs = []types.UID{podUID} }), true},
		{"nothing on disk", world(local), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.w).TearsDown(); got != tc.want {
				t.Errorf("TearsDown = %v, want %v", got, tc.want)
			}
		})
	}
}
