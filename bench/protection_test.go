package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/volplane/volplane/internal/controller/loop"
)

// Deleting claims end to end, volplane's protection loops next to the
// reference's (pkg/controller/volume/pvcprotection and pvprotection of
// k8s.io/kubernetes v1.36.3), each on a fresh control plane:
//
//	go test -run '^$' -bench Protection -benchtime 1x -timeout 60m ./bench/
//
// VOLPLANE_BENCH_N sets the number of claims (default 1000), and
// VOLPLANE_BENCH_WORKERS volplane's --workers (default loop.DefaultWorkers). Scenarios:
//   - unused: N claims no pod uses (and no volume);
//   - pairs: N claims Bound to provisioned volumes of a Delete class; done
//     when every PV is gone (binder and provisioner run unthrottled in
//     both, only the protection loops differ).
//
// The claims are all deleted first, then the protection loops under test
// start with that backlog; the clock runs from their start (informer sync
// included) until all is gone. Each is run with the protection loops'
// client at 20 QPS (burst 30, the reference's defaults) and unthrottled.
// Reported: seconds until all is gone, and the protection loops' API
// requests per claim (watches excluded, the informers' lists included).
// The reference runs with kube-controller-manager's 1 worker; volplane
// with 4. For unused claims unthrottled, the ceiling (the API server's rate
// for the same deletions from a trivial writer) is measured in the same run.
//
// Each case runs in a child process (a kube-apiserver embedded twice in one
// process is not something it supports).
func BenchmarkProtection(b *testing.B) {
	n := benchN()
	for _, scenario := range []string{"unused", "pairs"} {
		for _, qps := range []string{"20qps", "unthrottled"} {
			impls := []string{implReference, implVolplane}
			if scenario == "unused" && qps == "unthrottled" {
				impls = append(impls, implCeiling)
			}
			for _, impl := range impls {
				name := scenario + "/" + qps + "/" + impl
				b.Run(name, func(b *testing.B) {
					for range b.N {
						r := runChild(b, name, n)
						b.ReportMetric(r.Seconds, "s-to-all-gone")
						b.ReportMetric(float64(r.Requests)/float64(n), "requests/claim")
						b.Logf("%s n=%d: %.2fs, requests %v", name, n, r.Seconds, r.ByVerb)
					}
				})
			}
		}
	}
}

// What deletes the claims: the reference's loops, ours, or (unused claims,
// unthrottled) the ceiling, a trivial writer that removes every finalizer
// with one PATCH and reads nothing: no loop can be faster than it.
const (
	implReference = "reference"
	implVolplane  = "volplane"
	implCeiling   = "ceiling"
)

// caseEnv names the case a child process runs.
const caseEnv = "VOLPLANE_BENCH_CASE"

// BenchmarkProtectionCase is the body of one case; it runs only in a child
// started by BenchmarkProtection.
func BenchmarkProtectionCase(b *testing.B) {
	name := os.Getenv(caseEnv)
	if name == "" {
		b.Skip("run through BenchmarkProtection")
	}
	parts := strings.Split(name, "/")
	r, err := runCase(b, parts[0], parts[1] == "unthrottled", parts[2], benchN())
	if err != nil {
		b.Fatal(err)
	}
	out, _ := json.Marshal(r)
	fmt.Printf("%s%s\n", resultPrefix, out)
}

type result struct {
	Seconds  float64
	Requests int64
	ByVerb   map[string]int64
}

func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("VOLPLANE_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// benchWorkers is volplane's --workers for the protection loops
// (VOLPLANE_BENCH_WORKERS, default loop.DefaultWorkers, the default of volplane controller).
func benchWorkers() int {
	if n, err := strconv.Atoi(os.Getenv("VOLPLANE_BENCH_WORKERS")); err == nil && n > 0 {
		return n
	}
	return loop.DefaultWorkers
}

func runChild(b *testing.B, name string, n int) result {
	var r result
	runChildCase(b, "BenchmarkProtectionCase", name, n, &r)
	return r
}

// runChildCase runs the benchmark caseBench for the case name in a child
// process and decodes the JSON it prints after "RESULT " into r.
func runChildCase(b *testing.B, caseBench, name string, n int, r any) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"-test.run=^$", "-test.bench=^" + caseBench + "$", "-test.benchtime=1x"}
	if dir := os.Getenv("VOLPLANE_BENCH_PROFILE"); dir != "" {
		// The whole child: control plane, loops and agent in one profile.
		args = append(args, "-test.cpuprofile="+filepath.Join(dir, strings.NewReplacer("/", "_", "=", "").Replace(name)+".prof"))
	}
	cmd := exec.CommandContext(context.Background(), exe, args...)
	cmd.Env = append(os.Environ(), caseEnv+"="+name, "VOLPLANE_BENCH_N="+strconv.Itoa(n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("case %s: %v\n%s\n%s", name, err, out, lastLines(stderr.String(), 40))
	}
	if err := decodeResult(string(out), r); err != nil {
		b.Fatalf("case %s: %v", name, err)
	}
}
