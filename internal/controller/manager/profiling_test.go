package manager

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Profiles are served only when asked for: they cost CPU while taken and
// show internals, so --profiling is off unless an operator turns it on.
func TestProfilesAreServedOnlyWithProfiling(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		srv, addr, err := serveMetrics(Config{MetricsAddr: "127.0.0.1:0", Profiling: profiling}, prometheus.NewRegistry(), &loops{})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		want := http.StatusNotFound
		if profiling {
			want = http.StatusOK
		}
		if resp.StatusCode != want {
			t.Errorf("profiling=%v: /debug/pprof/goroutine answered %d, want %d", profiling, resp.StatusCode, want)
		}
	}
}
