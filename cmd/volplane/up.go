package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/features"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/nodeagent"
	"github.com/volplane/volplane/internal/userdriver"
)

// dataDirEnv overrides the default data dir of `up` and the default
// kubeconfig of `kubectl`, so the two always agree.
const dataDirEnv = "VOLPLANE_DATA_DIR"

func defaultDataDir() string {
	if dir := os.Getenv(dataDirEnv); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".volplane"
	}
	return filepath.Join(home, ".volplane")
}

func newUpCommand() *cobra.Command {
	var (
		cfg     cluster.Config
		drivers = upDriverFlags{capacity: resource.MustParse("100Gi")}
		user    userdriver.Flags
		metrics upMetricsFlags
		test    upTestFlags
		health  upHealthFlags
		onlyCP  bool
		gates   = features.New()
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run an embedded control plane with volplane on it",
		Long: `Start, in this process and on 127.0.0.1 only, etcd, the real kube-apiserver,
kube-scheduler and kube-controller-manager (without the volume controllers that
volplane replaces) and N simulated Ready nodes. An admin kubeconfig is written to
DIR/kubeconfig. State survives restarts on the same data dir. Ctrl-C stops it.

With --control-plane-only it runs the control plane alone: no simulated node,
no bundled driver, no volplane loop. Real kubelets join it with their own
certificates (signed by DIR/pki/ca.key) and deploy/ runs volplane's controller
and node DaemonSet on them; --advertise-address then names an address those
nodes reach the API server at (a relay to 127.0.0.1 there).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if onlyCP {
				if err := checkControlPlaneOnly(cmd); err != nil {
					return err
				}
				return runControlPlaneOnly(ctx, cmd, cfg)
			}
			cfg.FeatureGates = features.Changed(gates)
			if err := health.check(); err != nil {
				return err
			}
			specs, err := userdriver.Parse(user, nodeNames(cfg.Nodes))
			if err != nil {
				return err
			}
			return runUp(ctx, cmd, cfg, drivers, specs, metrics, gates, test, health)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", defaultDataDir(), "directory for etcd data, certificates, kubeconfig and logs (env "+dataDirEnv+")")
	f.IntVar(&cfg.Nodes, "nodes", 1, "number of simulated nodes (node-1..node-N)")
	f.IntVar(&cfg.APIServerPort, "apiserver-port", 0, "kube-apiserver port on 127.0.0.1 (0: a free port)")
	f.IntVar(&cfg.EtcdClientPort, "etcd-client-port", 0, "etcd client port on 127.0.0.1 (0: a free port)")
	f.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", 0, "etcd peer port on 127.0.0.1 (0: a free port)")
	f.StringVar(&cfg.AdvertiseAddress, "advertise-address", "127.0.0.1", "address of the API server in the `kubernetes` Service and its serving certificate; it still listens on 127.0.0.1 only")
	f.BoolVar(&onlyCP, "control-plane-only", false, "run etcd, kube-apiserver, kube-scheduler and kube-controller-manager only: no simulated node, bundled driver or volplane loop (real nodes and deploy/ play those parts)")
	f.Var(&quantityFlag{&drivers.capacity}, "hostpath-capacity", "bytes the bundled driver may give out on each simulated node, and the network driver in all, as a quantity")
	f.Int64Var(&drivers.networkMaxVolumes, "network-max-volumes-per-node", 0, "most network volumes attached to one simulated node at once (0: no limit); the nodes report it in their CSINodes, as a cloud disk's limit")
	f.BoolVar(&drivers.fakeMounts, "fake-mounts", false, "the bundled drivers record their mounts in memory instead of asking the kernel: no root, no kernel mount table (which caps mounts, here at 100,000) for clusters of many nodes; a pod's volume is then an empty directory, and nothing written to it is kept")
	f.StringVar(&metrics.addr, "metrics-bind-address", "127.0.0.1:0", `address of the loops' /metrics, /healthz and /readyz (port 0: a free port; "" disables)`)
	f.BoolVar(&metrics.profiling, "profiling", false, "also serve Go's CPU, heap and goroutine profiles under /debug/pprof on the metrics address: of the whole process, control plane, drivers, node agent and loops")
	f.Var(&faultsFlag{&test.faults}, "inject-faults", "for soak tests: make the bundled drivers fail, time out or delay controller calls (see volplane driver --inject-faults)")
	f.BoolVar(&test.withoutLoops, "without-loops", false, "for soak tests: run the control plane, drivers and node agent only; the loops run in `volplane controller` processes")
	addUserDriverFlags(f, &user)
	features.AddFlag(gates, f)
	_ = f.MarkHidden("inject-faults")
	health.register(f)
	_ = f.MarkHidden("without-loops")
	return cmd
}

// upDriverFlags size the bundled drivers.
type upDriverFlags struct {
	capacity          resource.Quantity
	networkMaxVolumes int64
	fakeMounts        bool
}

// upTestFlags are hidden flags for soak tests: faults in the drivers, and
// the loops left to separate processes that a test can kill on their own.
type upTestFlags struct {
	faults       hostpath.Faults
	withoutLoops bool
}

// upMetricsFlags say where the loops serve /metrics, and whether Go's
// profiles too.
type upMetricsFlags struct {
	addr      string
	profiling bool
}

func runUp(ctx context.Context, cmd *cobra.Command, cfg cluster.Config, driverFlags upDriverFlags, specs []userdriver.Spec, metrics upMetricsFlags, gates featuregate.FeatureGate, test upTestFlags, health upHealthFlags) error {
	if err := checkUp(cfg, driverFlags, specs, test); err != nil {
		return err
	}
	if _, err := cfg.Advertise(); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	cfg.DataDir = dir
	fmt.Fprintf(out, "Starting the embedded control plane in %s ...\n", dir)
	began := time.Now()
	cp, err := cluster.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer cp.Stop()
	// Everything below stops before the control plane does: the loops first,
	// then the drivers they call.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The drivers outlive the signal until the loops ended: a clean stop
	// unmounts through them (deferred Stop).
	drivers, err := startDrivers(context.WithoutCancel(ctx), cp, dir, driverFlags, specs, test.faults)
	if err != nil {
		return err
	}
	defer drivers.Stop()
	fmt.Fprintf(out, "volplane is up in %.1fs: API server %s, %d simulated node(s).\n", time.Since(began).Seconds(), cp.RESTConfig.Host, len(cp.Nodes))
	drivers.describe(out, len(cp.Nodes))
	fmt.Fprintf(out, "Use it with:\n  volplane kubectl --kubeconfig %s get nodes\n  export KUBECONFIG=%s\n", cp.Kubeconfig, cp.Kubeconfig)
	fmt.Fprintf(out, "Logs: %s\nPress Ctrl-C to stop.\n", filepath.Join(dir, "logs"))
	// One manager runs the loops and the node agent over one set of
	// informers; without loops (soak tests run them in `volplane
	// controller` processes) it runs the node agent alone.
	mcfg := upLoops(cp.RESTConfig, drivers.Endpoints, metrics.addr, out)
	mcfg.Profiling = metrics.profiling
	mcfg.Features = gates
	// A clean stop unmounts what the simulated nodes mounted (a kubelet
	// leaves them: the data dir of a stopped up must be removable); the
	// next start mounts again what the running pods need.
	mcfg.NodeAgent = &manager.NodeAgent{DataDir: dir, Nodes: nodeagent.NodesServedBy(cp.Nodes, drivers.NodeEndpoints), UnmountOnStop: true}
	health.apply(&mcfg)
	stopped := "volplane controllers stopped"
	if test.withoutLoops {
		mcfg.Controllers, mcfg.CSIEndpoints, mcfg.MetricsAddr, mcfg.Ready = nil, nil, "", nil
		stopped = "node agent stopped"
	}
	loops := make(chan error, 1)
	go func() { loops <- manager.Run(ctx, mcfg) }()
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "Shutting down ...")
		if err := <-loops; err != nil {
			// Said, not failed: what a stop could not undo (a mount left
			// under the data dir) is for the user to see.
			fmt.Fprintf(cmd.ErrOrStderr(), "While stopping: %v\n", err)
		}
		return nil
	case err := <-cp.Failed():
		cancel()
		<-loops
		return fmt.Errorf("control plane failed: %w", err)
	case err := <-drivers.Failed():
		cancel()
		<-loops
		return fmt.Errorf("CSI driver stopped: %w", err)
	case err := <-loops:
		return fmt.Errorf("%s: %w", stopped, err)
	}
}

// checkUp rejects flags that could only fail once the control plane is up.
// Without a node there is no bundled driver to provision from and no place
// for a pod, so --nodes 0 is refused here rather than after a 20 s start.
func checkUp(cfg cluster.Config, d upDriverFlags, specs []userdriver.Spec, test upTestFlags) error {
	capacity := d.capacity
	switch {
	case len(specs) > 0 && (d.fakeMounts || test.faults != (hostpath.Faults{})):
		return errors.New("--fake-mounts and --inject-faults change the bundled drivers, which do not run with --driver or --driver-endpoint")
	case cfg.Nodes < 1:
		return fmt.Errorf("--nodes %d: want at least 1 (the bundled CSI driver and every pod run on a simulated node; --control-plane-only runs none)", cfg.Nodes)
	case capacity.Sign() <= 0:
		return fmt.Errorf("--hostpath-capacity must be positive, got %s", capacity.String())
	case d.networkMaxVolumes < 0:
		return fmt.Errorf("--network-max-volumes-per-node must be 0 (no limit) or positive, got %d", d.networkMaxVolumes)
	}
	return nil
}

// upLoops runs every built loop against the embedded control plane (the
// caller adds the node agent's row). The API server is ours alone, so the
// loops have no client-side limit (its priority and fairness still
// applies): one shared limit, as all loops share one client, was what
// bound a 1,000-node cluster's provisioning (a 200 QPS budget for about six
// writes per claim: ~30 claims/s, binder workers waiting on the token
// bucket behind the provisioner's creates). Leader election
// stays off: the data dir's lock already lets only one `up` run the loops
// against this API server, and a Lease left by a killed `up` would hold the
// restarted one idle for a lease duration. Where the metrics
// are served is told on out once the loops are ready.
func upLoops(admin *rest.Config, endpoints []string, metricsAddr string, out io.Writer) manager.Config {
	rc := (&controllerFlags{}).limit(admin)
	cfg := manager.DefaultConfig()
	cfg.REST, cfg.Controllers, cfg.CSIEndpoints = rc, manager.Known(), endpoints
	cfg.LeaderElect = false
	cfg.MetricsAddr = metricsAddr
	cfg.Ready = func(addr string) { fmt.Fprintf(out, "Metrics: http://%s/metrics (and /healthz, /readyz)\n", addr) }
	return cfg
}

// quantityFlag is a flag holding a resource quantity such as 100Gi.
type quantityFlag struct{ q *resource.Quantity }

func (f *quantityFlag) String() string {
	if f.q == nil {
		return ""
	}
	return f.q.String()
}

func (f *quantityFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a quantity such as 100Gi", s)
	}
	*f.q = q
	return nil
}

func (f *quantityFlag) Type() string { return "quantity" }
