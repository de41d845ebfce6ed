package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/manager"
)

// A claim no volume fits says why, once it has waited a resync period,
// counted by reason over every volume, next to the reference's waiting
// event (here ProvisioningFailed: its class does not exist); each once per
// situation, not on every resync; and a new volume of its class is news.
func TestWaitingClaimSaysWhyNoVolumeFitsOncePerSituation(t *testing.T) {
	e := newEnv(t)
	withoutSharedBinder(t)
	e.noVolumesOfOtherTests() // the tally counts every volume of the cluster
	base := runManager(t, manager.Config{Workers: 2, ResyncPeriod: 500 * time.Millisecond, MetricsAddr: "127.0.0.1:0"})
	e.availablePV(e.pv("small-1", "1Gi"))
	e.availablePV(e.pv("small-2", "2Gi"))
	e.availablePV(e.pv("reserved", "20Gi", pvPreBound(e.ns, "someone-else")))
	e.availablePV(e.pv("other", "20Gi", pvClass(e.ns+"-other")))
	e.createClaim(e.claim("data", "10Gi"))
	first := "0/4 volumes available: 2 too small, 1 reserved for other claims, 1 other class"
	e.waitClaimEvent("data", v1.EventTypeNormal, binding.EventNoVolumeFits, first)
	e.waitClaimEvent("data", v1.EventTypeWarning, binding.EventProvisioningFailed, e.classNotFound())

	// Two passes after the event the claim was due again, and synced: with
	// a third, its resync has surely run, with nothing changed.
	e.waitResyncs(base, 3)
	e.availablePV(e.pv("small-3", "5Gi"))
	e.waitClaimEvent("data", v1.EventTypeNormal, binding.EventNoVolumeFits,
		"0/5 volumes available: 3 too small, 1 reserved for other claims, 1 other class")

	// Events reach the API server in the order they were recorded: a repeat
	// recorded before the second tally would be counted by now.
	for reason, msg := range map[string]string{binding.EventNoVolumeFits: first, binding.EventProvisioningFailed: e.classNotFound()} {
		var same []v1.Event
		for _, ev := range e.binderEvents("PersistentVolumeClaim", e.ns, "data", reason) {
			if ev.Message == msg {
				same = append(same, ev)
			}
		}
		if len(same) != 1 || same[0].Count != 1 {
			t.Errorf("%s %q recorded %v, want once across resyncs", reason, msg, summarize(same))
		}
	}
}

// noVolumesOfOtherTests waits until the PVs earlier tests deleted are gone.
func (e *env) noVolumesOfOtherTests() {
	e.t.Helper()
	e.eventually("no PVs of other tests", func() string {
		pvs, err := e.client.CoreV1().PersistentVolumes().List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		var names []string
		for _, pv := range pvs.Items {
			if pv.Labels["e2e-ns"] != e.ns {
				names = append(names, pv.Name)
			}
		}
		if len(names) > 0 {
			return "still there: " + strings.Join(names, ", ")
		}
		return ""
	})
}

// waitResyncs waits until the binder serving metrics at base has completed
// n more resync passes than it had when called.
func (e *env) waitResyncs(base string, n int) {
	e.t.Helper()
	start := -1
	e.eventually(fmt.Sprintf("%d binder resyncs", n), func() string {
		got, err := resyncs(base)
		if err != nil {
			return err.Error()
		}
		if start < 0 {
			start = got
		}
		if got < start+n {
			return fmt.Sprintf("%d of %d", got-start, n)
		}
		return ""
	})
}

// resyncs reads volplane_binder_resyncs_total from the metrics at base.
func resyncs(base string) (int, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "volplane_binder_resyncs_total "); ok {
			return strconv.Atoi(v)
		}
	}
	if err := lines.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no volplane_binder_resyncs_total in /metrics")
}
