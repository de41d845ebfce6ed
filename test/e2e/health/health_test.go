package health

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/health"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// Remove a running pod's volume directory behind the driver's back: the
// claim gets the monitor's VolumeConditionAbnormal event and the pod the
// node agent's; put it back: both get VolumeConditionNormal. Meanwhile a
// claim of another namespace that names the victim's PV in its
// spec.volumeName gets nothing (the gate is off here: events only).
func TestRemovedVolumeIsReportedAndItsRepairClears(t *testing.T) {
	client := stack.CP.Client
	ns, other := stacktest.Namespace(t), stacktest.Namespace(t)
	node := stack.CP.Nodes[0]
	handle := support.VictimAndThief(t, client, stack.EndedEarly, ns, other, node, bundle.WaitClass)
	dir := filepath.Join(stack.DataDir(), "hostpath", node, "volumes", handle)
	if err := os.WriteFile(filepath.Join(dir, "file"), make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	waitStat(t, ns, "used_bytes", func(v float64) bool { return v >= 64<<10 })
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	support.WaitEvent(t, client, stack.EndedEarly, ns, "data", health.ReasonAbnormal, "Inaccessible/DataMissing")
	support.WaitEvent(t, client, stack.EndedEarly, ns, "app", health.ReasonAbnormal, "Inaccessible/DataMissing")
	if got := unhealthy(t); len(got) != 1 || got[0].Object.Namespace != ns || got[0].Object.Name != "data" ||
		!strings.Contains(got[0].Problem, "Inaccessible/DataMissing") {
		t.Errorf("doctor's volume-unhealthy findings = %+v, want one on claim %s/data naming Inaccessible/DataMissing", got, ns)
	}

	waitStat(t, ns, "used_bytes", func(v float64) bool { return v == 0 }) // its data is gone: nothing to count

	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	support.WaitEvent(t, client, stack.EndedEarly, ns, "data", health.ReasonNormal, health.RecoveredMessage)
	support.WaitEvent(t, client, stack.EndedEarly, ns, "app", health.ReasonNormal, "")
	waitStat(t, ns, "used_bytes", func(v float64) bool { return v >= 64<<10 })
	if got := unhealthy(t); len(got) != 0 {
		t.Errorf("doctor's volume-unhealthy findings after the repair = %+v, want none", got)
	}

	// The monitor went over every volume at least twice meanwhile.
	if got := healthEvents(t, other, "thief"); len(got) != 0 {
		t.Errorf("events on a claim naming another tenant's volume: %v, want none", got)
	}
}

func waitRunning(t *testing.T, ns, name string) {
	t.Helper()
	stacktest.Eventually(t, "pod "+name+" Running", stacktest.PodRunning(context.Background(), stack.CP.Client, ns, name), stack.EndedEarly)
}

func healthEvents(t *testing.T, ns, name string) []string {
	t.Helper()
	return support.Events(t, stack.CP.Client, ns, name, health.ReasonAbnormal, health.ReasonNormal)
}

// unhealthy runs doctor as `volplane doctor --csi-endpoint ...` does and
// returns its volume-unhealthy findings.
func unhealthy(t *testing.T) []doctor.Finding {
	t.Helper()
	r, err := checkup.Doctor(context.Background(), stack.CP.Client,
		checkup.DoctorConfig{Endpoints: stack.Drivers.Endpoints, Output: "json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out []doctor.Finding
	for _, f := range r.Findings {
		if f.Kind == doctor.KindVolumeUnhealthy {
			out = append(out, f)
		}
	}
	return out
}

// waitStat waits until the node agent's kubelet_volume_stats_<name> of
// claim ns/data satisfies ok.
func waitStat(t *testing.T, ns, name string, ok func(float64) bool) {
	t.Helper()
	series := "kubelet_volume_stats_" + name + "{"
	stacktest.Eventually(t, series+ns+"/data}", func() string {
		addr, _ := agentMetrics.Load().(string)
		lines, err := support.MetricLines(addr)
		if err != nil {
			return err.Error()
		}
		for _, line := range lines {
			if !strings.HasPrefix(line, series) || !strings.Contains(line, `namespace="`+ns+`"`) ||
				!strings.Contains(line, `persistentvolumeclaim="data"`) {
				continue
			}
			v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
			if err == nil && ok(v) {
				return ""
			}
			return "got " + line
		}
		return "no series"
	}, stack.EndedEarly)
}
