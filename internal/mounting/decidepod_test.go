package mounting

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ownRecords narrows a world to what one pod's sync reads: the pod, the
// stagings of its volumes and its own publications.
func ownRecords(w World, pod *corev1.Pod) World {
	n := w
	n.Pods = []*corev1.Pod{pod}
	n.Staged, n.Published, n.PodDirs = nil, nil, []types.UID{pod.UID}
	mine := map[volumeKey]bool{}
	for _, p := range w.Published {
		if p.PodUID == pod.UID {
			n.Published = append(n.Published, p)
			mine[p.key()] = true
		}
	}
	for _, s := range w.Staged {
		if mine[s.key()] {
			n.Staged = append(n.Staged, s)
		}
	}
	return n
}

// TestDecidePodIsDecidesPodPlan: one pod's plan from its own records is
// the plan Decide makes for it from the whole node's world, for every pod
// of the node, and the pod asks for no report when its volumes are
// reported; a volume missing from the report asks for one.
func TestDecidePodIsDecidesPodPlan(t *testing.T) {
	w := steadyNode(20)
	full := Decide(w)
	for _, pod := range w.Pods {
		want, ok := full.PodPlan(pod)
		if !ok {
			t.Fatalf("pod %s: no plan in Decide", pod.UID)
		}
		got, live, report := DecidePod(ownRecords(w, pod), pod)
		if !live || report {
			t.Fatalf("pod %s: live %v report %v, want live and no report", pod.UID, live, report)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("pod %s: DecidePod %+v, Decide %+v", pod.UID, got, want)
		}
	}
	w.Reported = w.Reported[1:]
	if _, _, report := DecidePod(ownRecords(w, w.Pods[0]), w.Pods[0]); !report {
		t.Fatal("pod 0's volume is not reported in use, DecidePod asks for no report")
	}
	if _, _, report := DecidePod(ownRecords(w, w.Pods[1]), w.Pods[1]); report {
		t.Fatal("pod 1's volume is reported in use, DecidePod asks for a report")
	}
}

// BenchmarkDecidePodOwnRecords is one pod sync's pure decision with
// DecidePod on the pod's own records, at 10 and 1,000 pods on the node
// (compare BenchmarkDecideOnePodSync, the whole node's Decide).
func BenchmarkDecidePodOwnRecords(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w := steadyNode(n)
			p := w.Pods[n/2]
			own := ownRecords(w, p)
			b.ReportAllocs()
			for b.Loop() {
				if _, live, _ := DecidePod(own, p); !live {
					b.Fatal("pod not live")
				}
			}
		})
	}
}
