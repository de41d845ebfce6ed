package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// bindWatch records when each claim of the bench namespace is first seen
// Bound, through an informer, so a watch that breaks is re-listed and no
// bind is missed.
type bindWatch struct {
	mu    sync.Mutex
	bound map[string]time.Time // claim name → first seen Bound
	// changed is signalled (without blocking) after every new bind.
	changed chan struct{}
	// waiters: claim name → closed when that claim is Bound.
	waiters map[string]chan struct{}
}

func startBindWatch(ctx context.Context, client kubernetes.Interface) (*bindWatch, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(benchNS))
	return startWatch(ctx, "claims", factory.Core().V1().PersistentVolumeClaims().Informer(), factory.Start, claimBound)
}

// claimBound says a claim's name and whether it is Bound.
func claimBound(obj any) (string, bool) {
	if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		return c.Name, c.Status.Phase == corev1.ClaimBound
	}
	return "", false
}

// startWatch records when each object of inf is first seen done (done
// says its name and whether it is), once start has started inf and its
// cache is synced. what names the objects in errors.
func startWatch(ctx context.Context, what string, inf cache.SharedIndexInformer, start func(stop <-chan struct{}),
	done func(obj any) (name string, ok bool)) (*bindWatch, error) {
	w := newBindWatch()
	record := func(obj any) {
		if name, ok := done(obj); ok {
			w.see(name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		return nil, err
	}
	start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("watching %s: %w", what, ctx.Err())
	}
	return w, nil
}

func newBindWatch() *bindWatch {
	return &bindWatch{bound: map[string]time.Time{}, changed: make(chan struct{}, 1), waiters: map[string]chan struct{}{}}
}

func (w *bindWatch) see(name string) {
	now := time.Now()
	w.mu.Lock()
	_, dup := w.bound[name]
	if !dup {
		w.bound[name] = now
		if ch, ok := w.waiters[name]; ok {
			close(ch)
			delete(w.waiters, name)
		}
	}
	w.mu.Unlock()
	if !dup {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
}

// waitBound returns once the named claim has been seen Bound.
func (w *bindWatch) waitBound(ctx context.Context, name string) error {
	w.mu.Lock()
	if _, ok := w.bound[name]; ok {
		w.mu.Unlock()
		return nil
	}
	ch, ok := w.waiters[name]
	if !ok {
		ch = make(chan struct{})
		w.waiters[name] = ch
	}
	w.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s to be Bound: %w", name, ctx.Err())
	}
}

func (w *bindWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.bound)
}

// snapshot returns a copy of the bind times.
func (w *bindWatch) snapshot() map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]time.Time, len(w.bound))
	for k, v := range w.bound {
		out[k] = v
	}
	return out
}

// apiWrites are the API server's counts of writes to PVs and claims and of
// event writes, read from its /metrics (apiserver_request_total), so that
// every client is counted, whatever process it lives in.
type apiWrites struct {
	// PV, claim, VolumeSnapshot, VolumeSnapshotContent and
	// VolumeAttachment creates, updates, patches, deletes (status
	// included), and the attach/detach controllers' node status patches
	Volumes int64
	Events  int64
	// By counts the writes of Volumes and Events by "resource[/subresource]
	// VERB", e.g. "volumesnapshots/status PUT".
	By map[string]int64
}

func (a apiWrites) minus(b apiWrites) apiWrites {
	by := map[string]int64{}
	for k, n := range a.By {
		if d := n - b.By[k]; d != 0 {
			by[k] = d
		}
	}
	return apiWrites{Volumes: a.Volumes - b.Volumes, Events: a.Events - b.Events, By: by}
}

var writeVerbs = map[string]bool{"POST": true, "CREATE": true, "PUT": true, "UPDATE": true, "PATCH": true, "APPLY": true, "DELETE": true}

func readAPIWrites(ctx context.Context, client kubernetes.Interface) (apiWrites, error) {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiWrites{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return parseAPIWrites(raw)
}

// settledAPIWrites reads the counts once the volume writes stop changing:
// the API server counts a request only after it has answered it, so the
// last writes of a run a client has already seen may not be counted yet.
// It gives up waiting after a second and returns the last read.
func settledAPIWrites(ctx context.Context, client kubernetes.Interface) (apiWrites, error) {
	last, err := readAPIWrites(ctx, client)
	if err != nil {
		return last, err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for range 10 {
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-tick.C:
		}
		now, err := readAPIWrites(ctx, client)
		if err != nil || now.Volumes == last.Volumes {
			return now, err
		}
		last = now
	}
	return last, nil
}

func parseAPIWrites(raw []byte) (apiWrites, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return apiWrites{}, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	out := apiWrites{By: map[string]int64{}}
	fam, ok := families["apiserver_request_total"]
	if !ok {
		return out, fmt.Errorf("the API server's metrics have no apiserver_request_total")
	}
	for _, m := range fam.GetMetric() {
		labels := labelMap(m)
		if !writeVerbs[labels["verb"]] {
			continue
		}
		n := int64(m.GetCounter().GetValue())
		switch labels["resource"] {
		case "persistentvolumes", "persistentvolumeclaims", "volumesnapshots", "volumesnapshotcontents", "volumeattachments":
			out.Volumes += n
		case "nodes":
			if !attachDetachNodeWrite(labels) {
				continue
			}
			out.Volumes += n
		case "events":
			out.Events += n
		default:
			continue
		}
		kind := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			kind += "/" + sub
		}
		out.By[kind+" "+labels["verb"]] += n
	}
	return out, nil
}

// attachDetachNodeWrite says a Node write is an attach/detach
// controller's: both kube-controller-manager's and volplane's patch
// status.volumesAttached, and nothing else patches a node's status here
// (the simulated nodes' agent updates theirs with PUT, which is not
// counted).
func attachDetachNodeWrite(labels map[string]string) bool {
	return labels["subresource"] == "status" && labels["verb"] == "PATCH"
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// procStats are a process's CPU time and peak resident set, from /proc.
type procStats struct {
	CPUSeconds float64
	PeakRSS    int64
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func readProcStats(pid int) (procStats, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStats{}, err
	}
	// The command name (field 2) may hold spaces: count fields after its ')'.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return procStats{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(fields[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return procStats{}, fmt.Errorf("reading CPU times of /proc/%d/stat", pid)
	}
	out := procStats{CPUSeconds: float64(utime+stime) / clockTicks}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStats{}, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return procStats{}, fmt.Errorf("reading VmHWM of /proc/%d/status: %w", pid, err)
			}
			out.PeakRSS = kb * 1024
		}
	}
	return out, nil
}

// cpuMark is where the CPU clocks stood at one moment: this process's
// (the side's control plane and workload client) and the machine's, all
// cores, in seconds.
type cpuMark struct {
	self              float64
	machineBusy, idle float64
}

// markCPU reads the clocks now.
func markCPU() (cpuMark, error) {
	self, err := readProcStats(os.Getpid())
	if err != nil {
		return cpuMark{}, err
	}
	st, err := procfs.NewDefaultFS()
	if err != nil {
		return cpuMark{}, err
	}
	stat, err := st.Stat()
	if err != nil {
		return cpuMark{}, err
	}
	c := stat.CPUTotal // guest time is already in user and nice
	busy := c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	return cpuMark{self: self.CPUSeconds, machineBusy: busy, idle: c.Idle + c.Iowait}, nil
}

// since is this process's CPU seconds from m to now, and the fraction of
// the machine's CPU busy meanwhile. The kernel's iowait counter may step
// back (it is an estimate, see proc(5)), so an idle share that shrank
// counts as none: busy stays within [0, 1].
func (m cpuMark) since(now cpuMark) (self, busy float64) {
	b, idle := max(0, now.machineBusy-m.machineBusy), max(0, now.idle-m.idle)
	if b+idle > 0 {
		busy = b / (b + idle)
	}
	return now.self - m.self, busy
}
