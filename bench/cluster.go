package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/invariants"
)

// The cluster scenario: `volplane up --nodes M` in a child process (the
// control plane, the bundled drivers, the simulated nodes' agent and every
// loop: what a user runs), driven through its kubeconfig. Claims of the
// network class are created and bound, then pods, each using one of the
// first claims, are created and run (the scheduler places them); then half
// of the pods are deleted with their claims and recreated under new names,
// until every pod runs again and every deleted claim's volume is reclaimed.
// The invariant checker reads the cluster and the drivers at the end.

// Cluster is the scenario's name (--scenario cluster). It is run by
// RunCluster, outside Run's sides: there is one process under test, `up`.
const Cluster = "cluster"

// The scenario's sizes unless told: issue 28's cluster.
const (
	DefaultClusterNodes  = 1000
	DefaultClusterClaims = 100_000
	DefaultClusterPods   = 10_000
)

// ClusterReportJSON is the report's file name in the output directory.
const ClusterReportJSON = "cluster.json"

// ClusterOptions size the scenario.
type ClusterOptions struct {
	// Executable is the volplane binary that runs `up`.
	Executable string
	// Nodes, Claims and Pods: simulated nodes, claims created, pods (each
	// using one claim; Pods ≤ Claims).
	Nodes, Claims, Pods int
	// Timeout bounds each wait.
	Timeout  time.Duration
	Progress io.Writer
	// Profile, when set, has `up` serve Go's profiles and the bench save
	// a 30 s CPU profile and a heap profile of it every ProfileEvery, as
	// Profile.NN.cpu.pprof and Profile.NN.heap.pprof.
	Profile      string
	ProfileEvery time.Duration
}

// Validate rejects sizes the scenario cannot run.
func (o ClusterOptions) Validate() error {
	switch {
	case o.Executable == "":
		return errors.New("cluster: no volplane executable")
	case o.Nodes < 1:
		return fmt.Errorf("--nodes must be at least 1, got %d", o.Nodes)
	case o.Pods < 2:
		return fmt.Errorf("--pods must be at least 2 (half are deleted and recreated), got %d", o.Pods)
	case o.Claims < o.Pods:
		return fmt.Errorf("--pairs (%d claims) must be at least --pods (%d): each pod uses a claim of its own", o.Claims, o.Pods)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout must be above 0, got %s", o.Timeout)
	case o.Profile != "" && o.ProfileEvery < time.Minute:
		return fmt.Errorf("profiles every %s: at least a minute (each CPU profile takes 30 s)", o.ProfileEvery)
	}
	return nil
}

func clusterClaimName(i, round int) string {
	if round == 0 {
		return fmt.Sprintf("c-%06d", i)
	}
	return fmt.Sprintf("c-%06d-%d", i, round)
}

func clusterPodName(i, round int) string {
	if round == 0 {
		return fmt.Sprintf("p-%06d", i)
	}
	return fmt.Sprintf("p-%06d-%d", i, round)
}

func clusterClaim(name string) *corev1.PersistentVolumeClaim {
	class := bundle.NetworkClass
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNS},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Mi")}},
		},
	}
}

func clusterPod(name, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNS},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

// RunCluster runs the scenario and reports; it stops `up` before it
// returns.
func RunCluster(ctx context.Context, o ClusterOptions) (*ClusterReport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	prog := newProgress(o.Progress, Cluster)
	selfBefore, err := readProcStats(os.Getpid())
	if err != nil {
		return nil, err
	}
	u, startSeconds, err := startUp(ctx, o, prog)
	if err != nil {
		return nil, err
	}
	defer u.stop()
	if o.Profile != "" {
		go u.profileEvery(ctx, o.Profile, o.ProfileEvery, prog)
	}
	r := &ClusterReport{Nodes: o.Nodes, Claims: o.Claims, Pods: o.Pods, Recreated: o.Pods / 2, StartSeconds: startSeconds,
		Cores: runtime.NumCPU()}
	c := u.client
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", benchNS, err)
	}
	if err := waitDefaultServiceAccount(ctx, c); err != nil {
		return nil, err
	}
	if err := waitCount(ctx, o, prog, "CSINodes listing both drivers", o.Nodes, func() int {
		return registeredNodes(ctx, c)
	}); err != nil {
		return nil, err
	}
	r.RegisteredSeconds = time.Since(u.started).Seconds()
	factory := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(benchNS))
	claims, pods := factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().Pods()
	claimInf, podInf := claims.Informer(), pods.Informer()
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), claimInf.HasSynced, podInf.HasSynced) {
		return nil, ctx.Err()
	}

	// Claims, bound.
	began := time.Now()
	prog.start("creating claims", o.Claims)
	err = forEach(ctx, o.Claims, func() { prog.add(1) }, func(i int) error {
		_, err := c.CoreV1().PersistentVolumeClaims(benchNS).Create(ctx, clusterClaim(clusterClaimName(i, 0)), metav1.CreateOptions{})
		return err
	})
	prog.done()
	if err != nil {
		return nil, fmt.Errorf("creating claims: %w", err)
	}
	if err := waitCount(ctx, o, prog, "claims Bound", o.Claims, func() int { return boundClaims(claims.Lister()) }); err != nil {
		return nil, err
	}
	r.ClaimsBoundSeconds = time.Since(began).Seconds()

	// Pods, running.
	before, err := readAllWrites(ctx, c)
	if err != nil {
		return nil, err
	}
	began = time.Now()
	prog.start("creating pods", o.Pods)
	err = forEach(ctx, o.Pods, func() { prog.add(1) }, func(i int) error {
		_, err := c.CoreV1().Pods(benchNS).Create(ctx, clusterPod(clusterPodName(i, 0), clusterClaimName(i, 0)), metav1.CreateOptions{})
		return err
	})
	prog.done()
	if err != nil {
		return nil, fmt.Errorf("creating pods: %w", err)
	}
	if err := waitCount(ctx, o, prog, "pods Running", o.Pods, func() int { return runningPods(pods.Lister()) }); err != nil {
		return nil, err
	}
	r.RunningSeconds = time.Since(began).Seconds()
	after, err := readAllWrites(ctx, c)
	if err != nil {
		return nil, err
	}
	r.WritesBy = map[string]int64{}
	var total int64
	for k, n := range after {
		if d := n - before[k]; d != 0 {
			r.WritesBy[k] = d
			total += d
		}
	}
	r.WritesPerPod = float64(total) / float64(o.Pods)

	// Half the pods deleted with their claims, recreated under new names.
	deleted, err := recordDeleted(ctx, c, claims.Lister(), r.Recreated)
	if err != nil {
		return nil, err
	}
	began = time.Now()
	prog.start("deleting pods and claims", r.Recreated)
	err = forEach(ctx, r.Recreated, func() { prog.add(1) }, func(i int) error {
		if err := c.CoreV1().Pods(benchNS).Delete(ctx, clusterPodName(i, 0), metav1.DeleteOptions{}); err != nil {
			return err
		}
		return c.CoreV1().PersistentVolumeClaims(benchNS).Delete(ctx, clusterClaimName(i, 0), metav1.DeleteOptions{})
	})
	prog.done()
	if err != nil {
		return nil, fmt.Errorf("deleting: %w", err)
	}
	prog.start("recreating claims and pods", r.Recreated)
	err = forEach(ctx, r.Recreated, func() { prog.add(1) }, func(i int) error {
		if _, err := c.CoreV1().PersistentVolumeClaims(benchNS).Create(ctx, clusterClaim(clusterClaimName(i, 1)), metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := c.CoreV1().Pods(benchNS).Create(ctx, clusterPod(clusterPodName(i, 1), clusterClaimName(i, 1)), metav1.CreateOptions{})
		return err
	})
	prog.done()
	if err != nil {
		return nil, fmt.Errorf("recreating: %w", err)
	}
	if err := waitCount(ctx, o, prog, "pods Running", o.Pods, func() int { return runningPods(pods.Lister()) }); err != nil {
		return nil, err
	}
	pvs := factory.Core().V1().PersistentVolumes()
	pvInf := pvs.Informer()
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), pvInf.HasSynced) {
		return nil, ctx.Err()
	}
	if err := waitCount(ctx, o, prog, "deleted claims' volumes reclaimed", len(deleted), func() int {
		// A PV cache short of the claims' volumes has not listed yet: a
		// PV it lacks is not reclaimed for that.
		if all, _ := pvs.Lister().List(labels.Everything()); len(all) < o.Claims {
			return 0
		}
		n := 0
		for _, d := range deleted {
			if _, err := pvs.Lister().Get(d.PV); err != nil {
				n++
			}
		}
		return n
	}); err != nil {
		return nil, err
	}
	r.RecreateSeconds = time.Since(began).Seconds()

	// The invariants, then the processes' numbers.
	prog.phase("checking invariants")
	eps, err := u.endpoints()
	if err != nil {
		return nil, err
	}
	state, err := checkup.ReadInvariants(ctx, c, eps)
	if err != nil {
		return nil, fmt.Errorf("reading the invariants' state: %w", err)
	}
	r.Violations = invariants.Check(state, invariants.Expect{Deleted: deleted})
	upStats, err := readProcStats(u.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	self, err := readProcStats(os.Getpid())
	if err != nil {
		return nil, err
	}
	r.WallSeconds = time.Since(u.started).Seconds()
	r.Processes = []ClusterProcess{
		{Name: "up", CPUSeconds: upStats.CPUSeconds, PeakRSS: upStats.PeakRSS},
		{Name: "bench", CPUSeconds: self.CPUSeconds - selfBefore.CPUSeconds, PeakRSS: self.PeakRSS},
	}
	used := 0.0
	for _, p := range r.Processes {
		used += p.CPUSeconds
	}
	r.IdleCores = float64(r.Cores) - used/r.WallSeconds
	return r, nil
}

// recordDeleted is, for the first n claims, what the invariants need to
// know of a deleted claim: its UID, PV, backend volume and policy.
func recordDeleted(ctx context.Context, c kubernetes.Interface, claims corelisters.PersistentVolumeClaimLister, n int) ([]invariants.DeletedClaim, error) {
	out := make([]invariants.DeletedClaim, 0, n)
	for i := range n {
		cl, err := claims.PersistentVolumeClaims(benchNS).Get(clusterClaimName(i, 0))
		if err != nil {
			return nil, err
		}
		d := invariants.DeletedClaim{Namespace: benchNS, Name: cl.Name, UID: cl.UID, PV: cl.Spec.VolumeName}
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, cl.Spec.VolumeName, metav1.GetOptions{ResourceVersion: "0"})
		if err != nil {
			return nil, fmt.Errorf("the PV of %s: %w", cl.Name, err)
		}
		d.Policy = pv.Spec.PersistentVolumeReclaimPolicy
		if pv.Spec.CSI != nil {
			d.Volume = invariants.Volume{Driver: pv.Spec.CSI.Driver, Handle: pv.Spec.CSI.VolumeHandle}
		}
		out = append(out, d)
	}
	return out, nil
}

// waitCount waits until count() reaches want, telling progress.
func waitCount(ctx context.Context, o ClusterOptions, prog *progress, what string, want int, count func() int) error {
	prog.start("waiting: "+what, want)
	defer prog.done()
	deadline := time.Now().Add(o.Timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		n := count()
		prog.set(n)
		if n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d %s after %s", n, want, what, o.Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// registeredNodes counts the CSINodes that list both bundled drivers.
func registeredNodes(ctx context.Context, c kubernetes.Interface) int {
	list, err := c.StorageV1().CSINodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0
	}
	n := 0
	for _, cn := range list.Items {
		if len(cn.Spec.Drivers) >= 2 {
			n++
		}
	}
	return n
}

func boundClaims(l corelisters.PersistentVolumeClaimLister) int {
	all, _ := l.List(labels.Everything())
	n := 0
	for _, c := range all {
		if c.Status.Phase == corev1.ClaimBound {
			n++
		}
	}
	return n
}

func runningPods(l corelisters.PodLister) int {
	all, _ := l.List(labels.Everything())
	n := 0
	for _, p := range all {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// readAllWrites are the API server's write counts by "resource[/sub]
// VERB", every resource but Leases and Events.
func readAllWrites(ctx context.Context, c kubernetes.Interface) (map[string]int64, error) {
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	out := map[string]int64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		l := labelMap(m)
		if !writeVerbs[l["verb"]] || l["resource"] == "leases" || l["resource"] == "events" {
			continue
		}
		kind := l["resource"]
		if sub := l["subresource"]; sub != "" {
			kind += "/" + sub
		}
		out[kind+" "+l["verb"]] += int64(m.GetCounter().GetValue())
	}
	return out, nil
}
