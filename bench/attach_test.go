package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Pods going Running on `volplane up`, each with its own freshly
// provisioned network claim (class volplane-network, attach required), on
// 10 simulated nodes, each case on a fresh control plane:
//
//	go test -run '^$' -bench Attach -benchtime 1x -timeout 60m ./bench/
//
// VOLPLANE_BENCH_N is the number of pods, one value or a comma-separated
// list (default "100,1000"); select cases with e.g.
// -bench 'Attach/n=100/unthrottled'. VOLPLANE_BENCH_WORKERS sets the
// workers of attachdetach and the attacher (default loop.DefaultWorkers, `up`'s; the
// external-attacher runs 10). Per case, N claims are created and
// bound (not timed), then N pods are created (16 writers, pod i on node
// i%10+1 by spec.nodeName) and the clock runs from each pod's create call
// to the moment a pod watch sees it Running and Ready.
//
// Everything `up` runs is running (stacktest.StartStack: drivers with a
// fake mounter, node agent, all loops), but the loops run as three
// managers, each with a client of its own that counts its API writes:
// attachdetach, attacher, and the others (binder, provisioner,
// protection); the node agent has its own counting client too. Cases:
//   - reference-limits: the attacher at the external-attacher's default
//     client limits (5 QPS, burst 10), attachdetach at
//     kube-controller-manager's (20 QPS, burst 30); the other loops and the
//     node agent unthrottled (kubelets each have their own budget);
//   - unthrottled: every client unthrottled.
//
// Reported: pod creation to Running and Ready (p50, p99, max, in ms), the
// time until all are Running (s), the CPU cores the whole process (control
// plane included) kept busy meanwhile, and per attached volume the API writes
// (POST, PUT, PATCH, DELETE; events counted apart) of attachdetach, the
// attacher and the node agent, from the first pod create until the writes
// settle after the last pod is Running. The reference spends 2 writes per
// first attach in attachdetach (VolumeAttachment create, node status
// patch) and 3 in the external-attacher (PV finalizer, VolumeAttachment
// finalizer and annotation, VolumeAttachment status).
//
// Each case runs in a child process (a kube-apiserver embedded twice in one
// process is not something it supports); VOLPLANE_BENCH_PROFILE=dir writes
// each child's CPU profile there.
func BenchmarkAttach(b *testing.B) {
	benchCases(b, "BenchmarkAttachCase", attachResult.report)
}

// benchCases runs caseBench in a child process for every count of
// VOLPLANE_BENCH_N at both client limits, and reports each result.
func benchCases[R any](b *testing.B, caseBench string, report func(R, *testing.B, string, int)) {
	for _, n := range attachNs(b) {
		for _, limits := range []string{limitsReference, limitsNone} {
			name := fmt.Sprintf("n=%d/%s", n, limits)
			b.Run(name, func(b *testing.B) {
				for range b.N {
					var r R
					runChildCase(b, caseBench, name, n, &r)
					report(r, b, name, n)
				}
			})
		}
	}
}

// The client limits of a case.
const (
	limitsReference = "reference-limits"
	limitsNone      = "unthrottled"
)

// The clients whose writes are counted apart.
const (
	clientAttachDetach = "attachdetach"
	clientAttacher     = "attacher"
	clientAgent        = "nodeagent"
	clientOthers       = "other-loops"
)

// BenchmarkAttachCase is the body of one case; it runs only in a child
// started by BenchmarkAttach.
func BenchmarkAttachCase(b *testing.B) {
	caseBody(b, "BenchmarkAttach", func(referenceLimits bool, n int) (attachResult, error) {
		return runAttachCase(b, referenceLimits, n)
	})
}

// caseBody runs one case in the child started by parent: the case's name
// and count come from the environment; the result goes to the parent as a
// RESULT line.
func caseBody[R any](b *testing.B, parent string, run func(referenceLimits bool, n int) (R, error)) {
	name := os.Getenv(caseEnv)
	if name == "" {
		b.Skip("run through " + parent)
	}
	n, err := strconv.Atoi(os.Getenv("VOLPLANE_BENCH_N"))
	if err != nil {
		b.Fatal(err)
	}
	_, limits, _ := strings.Cut(name, "/")
	r, err := run(limits == limitsReference, n)
	if err != nil {
		b.Fatal(err)
	}
	out, _ := json.Marshal(r)
	fmt.Printf("%s%s\n", resultPrefix, out)
}

// attachResult is what one case measured.
type attachResult struct {
	// Latencies are each pod's create-to-Running-and-Ready, in seconds,
	// sorted.
	Latencies []float64
	// All is the time from the first create call until the last pod was
	// seen Running and Ready, in seconds.
	All float64
	// Stages are the medians, in seconds, from the pod's create call to
	// its VolumeAttachment being seen, then to it being attached, then to
	// the pod being Running and Ready.
	Stages [3]float64
	// CPUSeconds is the CPU time the whole process (control plane
	// included) used from the first create until all were Running.
	CPUSeconds float64
	// Writes are each client's writes by "VERB resource[/subresource]",
	// events included.
	Writes map[string]map[string]int64
}

func (r attachResult) report(b *testing.B, name string, n int) {
	b.ReportMetric(quantile(r.Latencies, 0.5)*1000, "p50-ms")
	b.ReportMetric(quantile(r.Latencies, 0.99)*1000, "p99-ms")
	b.ReportMetric(quantile(r.Latencies, 1)*1000, "max-ms")
	b.ReportMetric(r.All, "s-all")
	b.ReportMetric(r.All/float64(n)*1000, "ms/pod-all")
	if r.All > 0 {
		b.ReportMetric(r.CPUSeconds/r.All, "cpu-cores")
	}
	for _, c := range []string{clientAttachDetach, clientAttacher, clientAgent} {
		w, _ := splitEvents(r.Writes[c])
		b.ReportMetric(float64(w)/float64(n), "writes/attach-"+c)
	}
	b.Logf("%s: stages (median s) create->VA seen %.3f, ->attached %.3f, ->Ready %.3f",
		name, r.Stages[0], r.Stages[1], r.Stages[2])
	for _, c := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.Writes {
			if !yield(k) {
				return
			}
		}
	}) {
		w, ev := splitEvents(r.Writes[c])
		b.Logf("%s: %s %.2f writes/attach (+%.2f events) %v", name, c, float64(w)/float64(n), float64(ev)/float64(n), r.Writes[c])
	}
}

// splitEvents sums writes, events apart; the refusals ("POST
// volumeattachments 409") are already counted in their write.
func splitEvents(writes map[string]int64) (other, events int64) {
	for k, v := range writes {
		if strings.Count(k, " ") > 1 {
			continue
		}
		if strings.HasSuffix(k, " events") {
			events += v
		} else {
			other += v
		}
	}
	return other, events
}

// quantile of sorted values: the smallest with at least q of them at or
// below it.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// attachNs are the pod counts of VOLPLANE_BENCH_N (default 100 and 1000).
func attachNs(b *testing.B) []int {
	env := os.Getenv("VOLPLANE_BENCH_N")
	if env == "" {
		env = "100,1000"
	}
	var ns []int
	for f := range strings.SplitSeq(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("VOLPLANE_BENCH_N=%q: want positive counts separated by commas", env)
		}
		ns = append(ns, n)
	}
	return ns
}
