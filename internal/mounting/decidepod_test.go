package mounting

import (
	"fmt"
	"reflect"
	"testing"
)

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
		got, live, report := DecidePod(w.ForPod(pod), pod)
		if !live || report {
			t.Fatalf("pod %s: live %v report %v, want live and no report", pod.UID, live, report)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("pod %s: DecidePod %+v, Decide %+v", pod.UID, got, want)
		}
	}
	w.Reported = w.Reported[1:]
	if _, _, report := DecidePod(w.ForPod(w.Pods[0]), w.Pods[0]); !report {
		t.Fatal("pod 0's volume is not reported in use, DecidePod asks for no report")
	}
	if _, _, report := DecidePod(w.ForPod(w.Pods[1]), w.Pods[1]); report {
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
			own := w.ForPod(p)
			b.ReportAllocs()
			for b.Loop() {
				if _, live, _ := DecidePod(own, p); !live {
					b.Fatal("pod not live")
				}
			}
		})
	}
}
