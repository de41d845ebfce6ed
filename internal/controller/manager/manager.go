package manager

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/inflight"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
)

// Run runs the selected loops until ctx ends. With leader election it waits
// for the Lease first and returns an error if leadership is lost, so that the
// process restarts rather than running two leaders.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	loops := &loops{want: len(selectedRows(cfg)), standby: cfg.LeaderElect}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "volplane_leading",
		Help: "1 while this replica runs its loops (it holds the leader election Lease, or election is off), 0 while it stands by.",
	}, loops.leading))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	if cfg.MetricsAddr != "" {
		srv, addr, err := serveMetrics(cfg, reg, loops)
		if err != nil {
			return err
		}
		wg.Go(func() { <-ctx.Done(); _ = srv.Close() })
		if cfg.Ready != nil {
			cfg.Ready(addr)
		}
	}
	// The CSI drivers are dialed before the election, as the CSI sidecars
	// do: a wrong endpoint fails at start, not once the Lease is won.
	pool, err := dialDrivers(ctx, cfg, reg)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return stoppedWhileStarting(ctx, cfg, reg, loops, pool)
	}
	if pool != nil {
		defer func() { _ = pool.Close() }()
	}
	if !cfg.LeaderElect {
		return runLoops(ctx, cfg, reg, loops, pool)
	}
	return runElected(ctx, cfg, func(ctx context.Context) error {
		loops.lead()
		return runLoops(ctx, cfg, reg, loops, pool)
	})
}

// stoppedWhileStarting ends a Run stopped before its loops started, a
// normal shutdown: nothing ran, so nothing is left to undo, but for a node
// agent that unmounts on stop (`up`). Mounts an earlier, killed run left
// are still there and the agent's stop is what removes them, so the agent
// alone runs on the done context: its Run tears down at once.
func stoppedWhileStarting(ctx context.Context, cfg Config, reg prometheus.Registerer, l *loops, pool *csi.Pool) error {
	if pool != nil {
		_ = pool.Close()
	}
	if cfg.NodeAgent == nil || !cfg.NodeAgent.UnmountOnStop {
		return nil
	}
	agentOnly := cfg
	agentOnly.Controllers, agentOnly.CSIEndpoints = nil, nil
	return runLoops(ctx, agentOnly, reg, l, nil)
}

// loops tracks readiness for /readyz: ready once every selected loop is,
// or, with leader election, while waiting for the Lease (a standby replica
// is healthy and ready to take over: a Deployment counts it available, so a
// rolling update can proceed). Which replica leads is the gauge
// volplane_leading.
type loops struct {
	mu      sync.Mutex
	running []interface{ Ready() bool }
	want    int
	// standby: leader election is on and this replica does not hold the
	// Lease (yet).
	standby bool
}

// lead marks the end of the standby: the loops are starting.
func (l *loops) lead() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.standby = false
}

// leading is 1 while this replica runs the loops, 0 while it stands by.
func (l *loops) leading() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.standby {
		return 0
	}
	return 1
}

func (l *loops) started(loop interface{ Ready() bool }) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running = append(l.running, loop)
}

func (l *loops) ready() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.standby {
		return true
	}
	if len(l.running) == 0 || len(l.running) < l.want {
		return false
	}
	for _, r := range l.running {
		if !r.Ready() {
			return false
		}
	}
	return true
}

// Protobuf is what kube-controller-manager speaks too: several times cheaper
// than JSON to encode on the API server and to decode in our informers,
// which at a thousand binds a second is most of the CPU we spend.
func protobuf(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return rc
}

// runLoops builds the selected rows over one shared informer factory and
// runs them until ctx ends or one of them fails.
func runLoops(ctx context.Context, cfg Config, reg prometheus.Registerer, l *loops, pool *csi.Pool) error {
	client, err := kubernetes.NewForConfig(protobuf(cfg.REST))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	events, err := newBroadcaster(ctx, cfg.REST)
	if err != nil {
		return err
	}
	defer events.Shutdown()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(loop.Slim))
	// Nodes: the provisioner's topology, and the binder's to come.
	factory.Core().V1().Nodes().Informer()
	snaps, err := snapclient.NewForConfig(cfg.REST)
	if err != nil {
		return fmt.Errorf("snapshot client: %w", err)
	}
	snapFactory := snapinformers.NewSharedInformerFactoryWithOptions(snaps, 0, snapinformers.WithTransform(loop.Slim))
	w := wiring{Config: cfg, Client: client, Informers: factory, Snapshots: snaps, SnapshotInformers: snapFactory,
		Events: events, Metrics: reg, Pool: pool, Ledger: inflight.New()}
	runs, err := build(w, selectedRows(cfg), l)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	snapFactory.Start(ctx.Done())
	defer snapFactory.Shutdown()
	return runAll(ctx, runs)
}

// dialDrivers dials the CSI endpoints of the provisioner, the attacher and
// the resizer; nil without any of them.
func dialDrivers(ctx context.Context, cfg Config, reg prometheus.Registerer) (*csi.Pool, error) {
	if !needsDrivers(cfg) {
		return nil, nil
	}
	m, err := csi.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	pool, err := csi.DialPool(ctx, cfg.CSIEndpoints, m)
	if err != nil && ctx.Err() != nil {
		return nil, nil // stopped while dialing; Run sees ctx is done
	}
	if err != nil {
		return nil, err
	}
	for _, d := range pool.Drivers() {
		klog.FromContext(ctx).Info("Serving CSI driver", "driver", d, "endpoints", len(pool.Endpoints(d)))
	}
	return pool, nil
}

// runAll runs every loop; the first to fail stops the others.
func runAll(ctx context.Context, runs []Runnable) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(runs))
	for _, run := range runs {
		go func() {
			err := run.Run(ctx)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	var first error
	for range runs {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// newBroadcaster records events through a client of its own: events must
// not eat the QPS budget of the writes that bind volumes (the reference
// shares one, so a burst of waiting events slows binding down).
func newBroadcaster(ctx context.Context, cfg *rest.Config) (record.EventBroadcaster, error) {
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("event client: %w", err)
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartStructuredLogging(3)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b, nil
}

// serveMetrics serves /metrics, /healthz and /readyz on cfg.MetricsAddr,
// and Go's profiles too with cfg.Profiling.
func serveMetrics(cfg Config, reg *prometheus.Registry, l *loops) (*http.Server, string, error) {
	addr := cfg.MetricsAddr
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("metrics address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !l.ready() {
			http.Error(w, "not ready: the loops' caches are syncing", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	if cfg.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, ln.Addr().String(), nil
}
