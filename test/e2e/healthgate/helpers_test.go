package healthgate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/volplane/volplane/internal/health"
	"github.com/volplane/volplane/internal/stacktest"
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
	var pod *corev1.Pod
	stacktest.Eventually(t, "pod "+name+" Running", func() string {
		p, err := stack.CP.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("phase %s", p.Status.Phase)
		}
		pod = p
		return ""
	}, stack.EndedEarly)
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

// waitMetric waits until the node agent's /metrics has (present) or lacks
// a line starting with series and holding every one of labels.
func waitMetric(t *testing.T, series string, present bool, labels ...string) {
	t.Helper()
	stacktest.Eventually(t, fmt.Sprintf("%s%v present=%t", series, labels, present), func() string {
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
		found := ""
		for _, line := range strings.Split(string(body), "\n") {
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
