package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
)

const attachNodes = 10

// runAttachCase brings up `up` on 10 nodes, binds n network claims, then
// creates n pods and measures until all are Running and Ready.
func runAttachCase(b *testing.B, referenceLimits bool, n int) (attachResult, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "vp-bench-attach-")
	if err != nil {
		return attachResult{}, err
	}
	defer os.RemoveAll(dir)
	cp, err := cluster.Start(ctx, cluster.Config{DataDir: dir + "/cp", Nodes: attachNodes, UnsafeNoFsync: true})
	if err != nil {
		return attachResult{}, err
	}
	defer cp.Stop()
	counters := map[string]*writeCounter{}
	for _, c := range []string{clientAttachDetach, clientAttacher, clientAgent, clientOthers} {
		counters[c] = &writeCounter{}
	}
	stack, err := stacktest.StartStack(ctx, cp, stacktest.StackConfig{DataDir: dir + "/stack",
		Loops: func(c *manager.Config) {
			c.Controllers = []string{manager.Binder, manager.Provisioner, manager.PVCProtection, manager.PVProtection}
			// The attacher runs in a manager of its own, as in `up` it runs
			// beside the provisioner: new PVs carry its finalizer.
			c.AttacherElsewhere = true
			c.REST.Wrap(counters[clientOthers].wrap)
		},
		AgentREST: func(rc *rest.Config) { rc.Wrap(counters[clientAgent].wrap) },
	})
	if err != nil {
		return attachResult{}, err
	}
	defer stack.Stop()
	stopAttach := startAttachLoops(stack, referenceLimits, counters)
	defer stopAttach()

	client := kubernetes.NewForConfigOrDie(protobuf(cp.RESTConfig, -1))
	if err := bindClaims(ctx, client, stack, n, bundle.NetworkClass); err != nil {
		return attachResult{}, err
	}
	return measurePods(ctx, b, client, cp.Nodes, n, counters)
}

// startAttachLoops runs attachdetach and the attacher as managers of their
// own, each with a counting client at the case's limits.
func startAttachLoops(stack *stacktest.Stack, referenceLimits bool, counters map[string]*writeCounter) func() {
	var limits map[string][2]float32
	if referenceLimits {
		limits = map[string][2]float32{
			clientAttachDetach: {20, 30}, // kube-controller-manager
			clientAttacher:     {5, 10},  // external-attacher
		}
	}
	return startCountedLoops(stack, map[string]string{clientAttachDetach: manager.AttachDetach, clientAttacher: manager.Attacher}, limits, counters)
}

// startCountedLoops runs each loop of loops (client name to loop name) as a
// manager of its own, with a client that counts its writes in counters and
// is limited to limits (QPS, burst) by client name; a client without
// limits is unthrottled.
func startCountedLoops(stack *stacktest.Stack, loops map[string]string, limits map[string][2]float32,
	counters map[string]*writeCounter) func() {
	var running []*stacktest.Loops
	for c, loop := range loops {
		cfg := stack.LoopsConfig()
		cfg.Controllers, cfg.Workers = []string{loop}, benchWorkers()
		cfg.REST = rest.CopyConfig(stack.CP.RESTConfig)
		cfg.REST.QPS, cfg.REST.Burst = -1, 0
		if l, ok := limits[c]; ok {
			cfg.REST.QPS, cfg.REST.Burst = l[0], int(l[1])
		}
		cfg.REST.Wrap(counters[c].wrap)
		running = append(running, stacktest.StartLoops(cfg))
	}
	return func() {
		for _, l := range running {
			_ = l.Stop()
		}
	}
}

// bindClaims creates the bench namespace and n claims of class in it (16
// writers), and waits until all are Bound and the stack still runs.
func bindClaims(ctx context.Context, client kubernetes.Interface, stack *stacktest.Stack, n int, class string) error {
	if err := createNamespace(ctx, client); err != nil {
		return err
	}
	if err := parallel(n, func(i int) error { return createClaim(ctx, client, i, class) }); err != nil {
		return err
	}
	if err := waitFor(ctx, 10*time.Minute, func() (bool, error) { return allBound(ctx, client, n) }); err != nil {
		return fmt.Errorf("binding: %w", err)
	}
	return stack.EndedEarly()
}

func createNamespace(ctx context.Context, client kubernetes.Interface) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	// Pods are rejected until the namespace has its default ServiceAccount.
	return waitFor(ctx, time.Minute, func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(benchNS).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// measurePods creates the pods and watches them and their
// VolumeAttachments until every pod is Running and Ready.
func measurePods(ctx context.Context, b *testing.B, client kubernetes.Interface, nodes []string, n int,
	counters map[string]*writeCounter) (attachResult, error) {
	claimOfPV, err := claimsOfVolumes(ctx, client)
	if err != nil {
		return attachResult{}, err
	}
	t := newTimeline(n)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(benchNS))
	_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.podSeen(obj) },
		UpdateFunc: func(_, obj any) { t.podSeen(obj) },
	})
	vas := informers.NewSharedInformerFactory(client, 0)
	_, _ = vas.Storage().V1().VolumeAttachments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.attachmentSeen(obj, claimOfPV) },
		UpdateFunc: func(_, obj any) { t.attachmentSeen(obj, claimOfPV) },
	})
	factory.Start(ctx.Done())
	vas.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	vas.WaitForCacheSync(ctx.Done())
	for _, c := range counters {
		c.reset()
	}
	cpuBefore := cpuSeconds()
	began := time.Now()
	err = parallel(n, func(i int) error {
		t.created(i)
		_, err := client.CoreV1().Pods(benchNS).Create(ctx, newPod(i, nodes[i%len(nodes)]), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return attachResult{}, err
	}
	if err := waitFor(ctx, 30*time.Minute, func() (bool, error) { return t.allReady(), nil }); err != nil {
		return attachResult{}, fmt.Errorf("pods Running: %w (%d of %d)", err, t.readyCount(), n)
	}
	r := t.result(began)
	r.CPUSeconds = cpuSeconds() - cpuBefore
	settle(ctx, counters)
	r.Writes = map[string]map[string]int64{}
	for name, c := range counters {
		r.Writes[name] = c.snapshot()
	}
	return r, nil
}

// claimsOfVolumes maps each bound PV to its claim's index.
func claimsOfVolumes(ctx context.Context, client kubernetes.Interface) (map[string]int, error) {
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, pv := range pvs.Items {
		var i int
		if pv.Spec.ClaimRef != nil {
			if _, err := fmt.Sscanf(pv.Spec.ClaimRef.Name, "c-%d", &i); err == nil {
				out[pv.Name] = i
			}
		}
	}
	return out, nil
}

func podName(i int) string { return fmt.Sprintf("p-%05d", i) }

func newPod(i int, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName(i), Namespace: benchNS},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(i)}}}}}}
}

// settle waits until no counted client wrote for a second (at most 15 s):
// the writes that follow the last pod's start (a node status patch) belong
// to the attach too.
func settle(ctx context.Context, counters map[string]*writeCounter) {
	total := func() (sum int64) {
		for _, c := range counters {
			for _, v := range c.snapshot() {
				sum += v
			}
		}
		return sum
	}
	last, quietSince, deadline := total(), time.Now(), time.Now().Add(15*time.Second)
	for time.Now().Before(deadline) && time.Since(quietSince) < time.Second && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		if now := total(); now != last {
			last, quietSince = now, time.Now()
		}
	}
}

// timeline records, per pod index, when it was created, when its
// VolumeAttachment was first seen and seen attached, and when the pod was
// seen Running and Ready.
type timeline struct {
	mu                                 sync.Mutex
	createdAt, vaSeen, attached, ready []time.Time
	nReady                             int
}

func newTimeline(n int) *timeline {
	return &timeline{createdAt: make([]time.Time, n), vaSeen: make([]time.Time, n),
		attached: make([]time.Time, n), ready: make([]time.Time, n)}
}

func (t *timeline) created(i int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.createdAt[i] = time.Now()
}

func (t *timeline) podSeen(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Status.Phase != corev1.PodRunning || !podutils.IsPodReady(pod) {
		return
	}
	var i int
	if _, err := fmt.Sscanf(pod.Name, "p-%d", &i); err != nil || i >= len(t.ready) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ready[i].IsZero() {
		t.ready[i] = time.Now()
		t.nReady++
	}
}

func (t *timeline) attachmentSeen(obj any, claimOfPV map[string]int) {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok || va.Spec.Source.PersistentVolumeName == nil {
		return
	}
	i, ok := claimOfPV[*va.Spec.Source.PersistentVolumeName]
	if !ok || i >= len(t.vaSeen) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.vaSeen[i].IsZero() {
		t.vaSeen[i] = time.Now()
	}
	if va.Status.Attached && t.attached[i].IsZero() {
		t.attached[i] = time.Now()
	}
}

func (t *timeline) allReady() bool { return t.readyCount() == len(t.ready) }

func (t *timeline) readyCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nReady
}

// result computes the latencies, the time for all and the stage medians.
func (t *timeline) result(began time.Time) attachResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	var r attachResult
	var last time.Time
	stages := make([][]float64, 3)
	for i := range t.ready {
		r.Latencies = append(r.Latencies, t.ready[i].Sub(t.createdAt[i]).Seconds())
		if t.ready[i].After(last) {
			last = t.ready[i]
		}
		if t.vaSeen[i].IsZero() || t.attached[i].IsZero() {
			continue
		}
		stages[0] = append(stages[0], t.vaSeen[i].Sub(t.createdAt[i]).Seconds())
		stages[1] = append(stages[1], t.attached[i].Sub(t.vaSeen[i]).Seconds())
		stages[2] = append(stages[2], t.ready[i].Sub(t.attached[i]).Seconds())
	}
	slices.Sort(r.Latencies)
	for s := range stages {
		slices.Sort(stages[s])
		r.Stages[s] = quantile(stages[s], 0.5)
	}
	r.All = last.Sub(began).Seconds()
	return r
}

// cpuSeconds is the CPU time this process used so far: the control plane,
// the loops, the agent and the drivers all run in it.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// writeCounter counts one client's writes by verb and resource.
type writeCounter struct {
	mu     sync.Mutex
	writes map[string]int64
}

func (c *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			key := req.Method + " " + resourceOf(req.URL.Path)
			c.mu.Lock()
			if c.writes == nil {
				c.writes = map[string]int64{}
			}
			c.writes[key]++
			c.mu.Unlock()
			resp, err := rt.RoundTrip(req)
			if refused := refusal(resp, err); refused != "" {
				// A write the server did not make (a conflict, an
				// existing object, a 429 client-go retries) is counted
				// under its answer too, so a duplicate create shows.
				c.mu.Lock()
				c.writes[key+" "+refused]++
				c.mu.Unlock()
			}
			return resp, err
		}
		return rt.RoundTrip(req)
	})
}

// refusal is how a write was answered when it was not done: the HTTP
// status, or "error" when no answer came; "" for a success.
func refusal(resp *http.Response, err error) string {
	switch {
	case err != nil:
		return "error"
	case resp.StatusCode >= 300:
		return strconv.Itoa(resp.StatusCode)
	}
	return ""
}

func (c *writeCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = nil
}

func (c *writeCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for k, v := range c.writes {
		out[k] = v
	}
	return out
}

// resourceOf is "resource" or "resource/subresource" of an API path:
// /api/v1/namespaces/ns/pods/p/status is "pods/status".
func resourceOf(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	}
	if len(segs) > 2 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	switch len(segs) {
	case 0:
		return path
	case 1, 2:
		return segs[0]
	default:
		return segs[0] + "/" + segs[2]
	}
}
