package health

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

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
	ctx, client := context.Background(), stack.CP.Client
	ns, other := stacktest.Namespace(t), stacktest.Namespace(t)
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx,
		support.Claim(ns, "data", bundle.WaitClass, "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := stack.CP.Nodes[0]
	if _, err := client.CoreV1().Pods(ns).Create(ctx, support.Pod(ns, "app", node, "data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ns, "app")
	claim, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	thief := support.Claim(other, "thief", bundle.WaitClass, "1Gi")
	thief.Spec.VolumeName = claim.Spec.VolumeName
	if _, err := client.CoreV1().PersistentVolumeClaims(other).Create(ctx, thief, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	handle := support.VolumeHandle(t, client, ns, "data")
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
	stacktest.Eventually(t, "pod "+name+" Running", func() string {
		pod, err := stack.CP.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if pod.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("phase %s", pod.Status.Phase)
		}
		return ""
	}, stack.EndedEarly)
}

func healthEvents(t *testing.T, ns, name string) []string {
	t.Helper()
	list, err := stack.CP.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == health.ReasonAbnormal || e.Reason == health.ReasonNormal {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
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
		if addr == "" {
			return "no metrics address yet"
		}
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err.Error()
		}
		for _, line := range strings.Split(string(body), "\n") {
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
