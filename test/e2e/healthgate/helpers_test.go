package healthgate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/health"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// agentMetrics is the address of the node agent's /metrics.
var agentMetrics atomic.Value

// healthCall is one NodeGetVolumeHealth a node service answered.
type healthCall struct {
	req *csipb.NodeGetVolumeHealthRequest
	err error
}

// healthCalls records the node services' NodeGetVolumeHealth calls, by
// volume ID.
type healthCalls struct {
	mu   sync.Mutex
	byID map[string][]healthCall
}

func (h *healthCalls) intercept(string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		resp, err := next(ctx, req)
		if r, ok := req.(*csipb.NodeGetVolumeHealthRequest); ok {
			h.mu.Lock()
			if h.byID == nil {
				h.byID = map[string][]healthCall{}
			}
			h.byID[r.GetVolumeId()] = append(h.byID[r.GetVolumeId()], healthCall{req: r, err: err})
			h.mu.Unlock()
		}
		return resp, err
	}
}

func (h *healthCalls) of(id string) []healthCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]healthCall(nil), h.byID[id]...)
}

func waitRunning(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	ctx, client := context.Background(), stack.CP.Client
	stacktest.Eventually(t, "pod "+name+" Running", stacktest.PodRunning(ctx, client, ns, name), stack.EndedEarly)
	pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// waitClaimHealth waits until the claim's status.healthStatus says want:
// "" for none, else Summary's "Status/Reason" of its one condition.
func waitClaimHealth(t *testing.T, ns, name, want string) {
	t.Helper()
	stacktest.Eventually(t, fmt.Sprintf("claim %s/%s healthStatus %q", ns, name, want), func() string {
		c, err := stack.CP.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return same("healthStatus", conditionsOf(c.Status.HealthStatus), want)
	}, stack.EndedEarly)
}

func conditionsOf(h *corev1.VolumeHealthStatus) []corev1.VolumeHealthCondition {
	if h == nil {
		return nil
	}
	return h.HealthConditions
}

// waitPodHealth waits until the pod's status.volumeHealth entry of volume
// says want ("" for an entry with no conditions).
func waitPodHealth(t *testing.T, ns, name, volume, want string) {
	t.Helper()
	stacktest.Eventually(t, fmt.Sprintf("pod %s/%s volumeHealth %s %q", ns, name, volume, want), func() string {
		p, err := stack.CP.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		for _, h := range p.Status.VolumeHealth {
			if h.Name == volume {
				return same("volumeHealth", h.HealthConditions, want)
			}
		}
		return fmt.Sprintf("no volumeHealth entry %s in %+v", volume, p.Status.VolumeHealth)
	}, stack.EndedEarly)
}

func same(field string, conds []corev1.VolumeHealthCondition, want string) string {
	got := ""
	for _, c := range conds {
		got += string(c.Status) + "/" + c.Reason
	}
	if got != want {
		return fmt.Sprintf("%s %q", field, got)
	}
	return ""
}

// healthEvents are the health events on the object named name in ns.
func healthEvents(t *testing.T, ns, name string) []string {
	t.Helper()
	return support.Events(t, stack.CP.Client, ns, name, health.ReasonAbnormal, health.ReasonNormal)
}

// waitMetric waits until the node agent's /metrics has (present) or lacks
// a line starting with series and holding every one of labels.
func waitMetric(t *testing.T, series string, present bool, labels ...string) {
	t.Helper()
	stacktest.Eventually(t, fmt.Sprintf("%s%v present=%t", series, labels, present), func() string {
		addr, _ := agentMetrics.Load().(string)
		lines, err := support.MetricLines(addr)
		if err != nil {
			return err.Error()
		}
		found := ""
		for _, line := range lines {
			if strings.HasPrefix(line, series+"{") && containsAll(line, labels) {
				found = line
			}
		}
		if (found != "") != present {
			return "found " + fmt.Sprintf("%q", found)
		}
		return ""
	}, stack.EndedEarly)
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
