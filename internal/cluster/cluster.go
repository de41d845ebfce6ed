package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Config says how to start a control plane. Zero ports mean "pick a free one".
type Config struct {
	DataDir        string
	Nodes          int
	APIServerPort  int
	EtcdClientPort int
	EtcdPeerPort   int
	// AdvertiseAddress is the API server's address in the `kubernetes`
	// Service (default 127.0.0.1); it listens on 127.0.0.1 whatever this
	// is, so something (a relay) must carry the address to it.
	AdvertiseAddress string
	// UnsafeNoFsync turns off etcd's fsync: for tests only, where speed
	// matters and the data dir is thrown away.
	UnsafeNoFsync bool
	// RunComponent, when set, runs kube-apiserver, kube-scheduler and
	// kube-controller-manager (name) with the flags of the embedded ones
	// (args) until ctx ends, instead of the embedded ones; logDir is where
	// the control plane's logs go. For tests only: tools/compat runs the
	// end-to-end core against another release's binaries this way
	// (stacktest.BinariesEnv).
	RunComponent func(ctx context.Context, name, logDir string, args []string) error
	// FeatureGates, if set, is passed as --feature-gates to the embedded
	// kube-apiserver and kube-controller-manager ("Name=true,..."): the
	// gates volplane's loops read that the API also checks (the health
	// fields of CSIVolumeHealth), so both sides agree.
	FeatureGates string
	// KeepControllers are loops of ReplacedControllers the embedded
	// kube-controller-manager runs anyway (e.g. "attachdetach"): for
	// `volplane bench`, whose reference side is the upstream loop. Names
	// outside ReplacedControllers are ignored.
	KeepControllers []string
	// ControllerManagerQPS and ControllerManagerBurst, when QPS is not 0,
	// are kube-controller-manager's --kube-api-qps and --kube-api-burst
	// (QPS below 0: no client-side limit): for `volplane bench`, whose
	// reference side runs one of its loops at the bench's limits. 0 keeps
	// its defaults (20, 30).
	ControllerManagerQPS   float32
	ControllerManagerBurst int
}

// controllerManagerExtra are kube-controller-manager's flags from the
// Config: the feature gates and the client limits, if any.
func (c Config) controllerManagerExtra() []string {
	args := c.gateArgs()
	if c.ControllerManagerQPS != 0 {
		args = append(args, "--kube-api-qps="+strconv.FormatFloat(float64(c.ControllerManagerQPS), 'f', -1, 32),
			"--kube-api-burst="+strconv.Itoa(c.ControllerManagerBurst))
	}
	return args
}

// gateArgs are the --feature-gates flag of the components, if any.
func (c Config) gateArgs() []string {
	if c.FeatureGates == "" {
		return nil
	}
	return []string{"--feature-gates=" + c.FeatureGates}
}

// readyTimeout bounds the wait for the API server and the controller
// manager's first work (the default ServiceAccount) after etcd is up.
const readyTimeout = 3 * time.Minute

// stopTimeout bounds how long Stop waits for one component to return.
const stopTimeout = 30 * time.Second

// ControlPlane is a running embedded control plane.
type ControlPlane struct {
	// Kubeconfig is the path of the admin kubeconfig.
	Kubeconfig string
	// RESTConfig authenticates as cluster admin.
	RESTConfig *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// Nodes are the names of the simulated nodes.
	Nodes []string

	etcd     *embed.Etcd
	lockFile *os.File
	logFile  *os.File
	// api runs the API server, workers the components that talk to it; they
	// stop in reverse order of start.
	api, workers *group
	failed       chan error
	// nodes keeps the simulated nodes alive.
	nodes *nodeAgent
}

// Start brings up etcd, kube-apiserver, kube-scheduler, kube-controller-manager
// and the simulated nodes, and returns once the cluster can run pods.
// On error everything started so far is stopped again.
func Start(ctx context.Context, cfg Config) (cp *ControlPlane, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("no data dir given")
	}
	if cfg.Nodes < 0 {
		return nil, fmt.Errorf("--nodes must be at least 0, got %d", cfg.Nodes)
	}
	if _, err := cfg.Advertise(); err != nil {
		return nil, err
	}
	dir := dataDir(cfg.DataDir)
	if err := dir.prepare(); err != nil {
		return nil, err
	}
	cp = &ControlPlane{Kubeconfig: dir.kubeconfig(), failed: make(chan error, 4)}
	defer func() {
		if err != nil {
			cp.Stop()
			cp = nil
		}
	}()
	if cp.lockFile, err = dir.lock(); err != nil {
		return cp, err
	}
	if err := cp.startStorage(ctx, dir, cfg); err != nil {
		return cp, err
	}
	if err := cp.startAPIServer(ctx, dir, cfg); err != nil {
		return cp, err
	}
	if err := cp.startWorkers(ctx, dir, cfg); err != nil {
		return cp, err
	}
	return cp, nil
}

func (cp *ControlPlane) startStorage(ctx context.Context, dir dataDir, cfg Config) error {
	if err := dir.pki().ensure(); err != nil {
		return err
	}
	advertise, _ := cfg.Advertise()
	if err := dir.pki().ensureServes(advertise); err != nil {
		return err
	}
	if err := os.MkdirAll(dir.logDir(), 0o700); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	logFile, err := os.OpenFile(dir.logDir()+"/control-plane.log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open control plane log: %w", err)
	}
	cp.logFile = logFile
	redirectKlog(logFile)
	clientPort, err := portOrFree(cfg.EtcdClientPort)
	if err != nil {
		return err
	}
	peerPort, err := portOrFree(cfg.EtcdPeerPort)
	if err != nil {
		return err
	}
	cp.etcd, err = startEtcd(ctx, string(dir), dir.logDir()+"/etcd.log", etcdTLS(dir.pki()), clientPort, peerPort, cfg.UnsafeNoFsync)
	if err != nil {
		return err
	}
	return nil
}

func (cp *ControlPlane) startAPIServer(ctx context.Context, dir dataDir, cfg Config) error {
	port, err := portOrFree(cfg.APIServerPort)
	if err != nil {
		return err
	}
	if err := dir.writeKubeconfig(fmt.Sprintf("https://127.0.0.1:%d", port)); err != nil {
		return err
	}
	if cp.RESTConfig, err = dir.restConfig(); err != nil {
		return err
	}
	cp.RESTConfig.QPS, cp.RESTConfig.Burst = 100, 200
	// Every in-process client is built from this one (the heartbeats, the
	// node agent, the loops): none asks for gzip, which next to the API
	// server costs both sides CPU and saves nothing (as kube-controller-
	// manager's and the scheduler's clients).
	cp.RESTConfig.DisableCompression = true
	if cp.Client, err = kubernetes.NewForConfig(cp.RESTConfig); err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	advertise, _ := cfg.Advertise()
	args := append(apiServerArgs(dir.pki(), cp.etcdClientPort(), port, advertise), cfg.gateArgs()...)
	cp.api = startGroup(ctx, cp.failed)
	cp.api.run("kube-apiserver", func(ctx context.Context) error {
		if cfg.RunComponent != nil {
			return cfg.RunComponent(ctx, "kube-apiserver", dir.logDir(), args)
		}
		return runAPIServer(ctx, args)
	})
	return cp.waitReady(ctx, "kube-apiserver", func(ctx context.Context) (bool, error) {
		body, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

func (cp *ControlPlane) startWorkers(ctx context.Context, dir dataDir, cfg Config) error {
	// The simulated kubelets' heartbeats have a client of their own with
	// no client-side limit, as each kubelet has its own: behind the admin
	// client's 100 QPS, 1,000 nodes' renewals (100 writes/s) and status
	// reports fell behind and nodes went NotReady.
	beats := rest.CopyConfig(cp.RESTConfig)
	beats.QPS = -1
	beatClient, err := kubernetes.NewForConfig(beats)
	if err != nil {
		return fmt.Errorf("node heartbeat client: %w", err)
	}
	agent := newNodeAgent(beatClient, cfg.Nodes)
	cp.Nodes, cp.nodes = agent.names, agent
	if err := agent.register(ctx); err != nil {
		return err
	}
	kubeconfig := dir.kubeconfig()
	cp.workers = startGroup(ctx, cp.failed)
	cp.workers.run("kube-scheduler", func(ctx context.Context) error {
		if cfg.RunComponent != nil {
			return cfg.RunComponent(ctx, "kube-scheduler", dir.logDir(), componentArgs(kubeconfig))
		}
		return runScheduler(ctx, kubeconfig)
	})
	cp.workers.run("kube-controller-manager", func(ctx context.Context) error {
		if cfg.RunComponent != nil {
			args := componentArgs(kubeconfig, append(controllerManagerArgs(dir.pki(), cfg.KeepControllers), cfg.controllerManagerExtra()...)...)
			return cfg.RunComponent(ctx, "kube-controller-manager", dir.logDir(), args)
		}
		return runControllerManager(ctx, kubeconfig, dir.pki(), cfg.KeepControllers, cfg.controllerManagerExtra()...)
	})
	cp.workers.run("node agent", func(ctx context.Context) error { agent.run(ctx); return nil })
	// The default ServiceAccount is the controller manager's first visible
	// work; without it no pod can be created.
	return cp.waitReady(ctx, "kube-controller-manager", func(ctx context.Context) (bool, error) {
		_, err := cp.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// waitReady polls until cond holds, a component fails, or readyTimeout passes.
func (cp *ControlPlane) waitReady(ctx context.Context, what string, cond wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	go func() {
		select {
		case err := <-cp.failed:
			cp.failed <- err
			cancel()
		case <-ctx.Done():
		}
	}()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond)
	if err == nil {
		return nil
	}
	select {
	case failure := <-cp.failed:
		cp.failed <- failure
		return failure
	default:
	}
	return fmt.Errorf("%s not ready after %s (logs in %s): %w", what, readyTimeout, cp.logFile.Name(), err)
}

func (cp *ControlPlane) etcdClientPort() int {
	return cp.etcd.Clients[0].Addr().(*net.TCPAddr).Port
}

// SetNodeDown takes a simulated node down (its heartbeat stops and its
// Ready condition turns Unknown at once) or brings it up again (it reports
// Ready and renews its Lease at once). The node's volume agent, a separate
// component, is taken down by its owner.
func (cp *ControlPlane) SetNodeDown(ctx context.Context, name string, down bool) error {
	if cp.nodes == nil {
		return errors.New("the control plane has no simulated nodes")
	}
	return cp.nodes.setDown(ctx, name, down)
}

// Failed delivers the first error of a component that stopped on its own.
func (cp *ControlPlane) Failed() <-chan error { return cp.failed }

// Stop shuts everything down in reverse order and releases the data dir. It
// is safe to call on a partly started control plane.
func (cp *ControlPlane) Stop() {
	if cp.workers != nil {
		cp.workers.stop(stopTimeout)
	}
	if cp.api != nil {
		cp.api.stop(stopTimeout)
	}
	if cp.etcd != nil {
		cp.etcd.Close()
	}
	if cp.logFile != nil {
		klog.Flush()
	}
	if cp.lockFile != nil {
		cp.lockFile.Close()
	}
}

// Advertise parses AdvertiseAddress: a unicast address, 127.0.0.1 if unset.
func (cfg Config) Advertise() (net.IP, error) {
	if cfg.AdvertiseAddress == "" {
		return net.ParseIP("127.0.0.1"), nil
	}
	ip := net.ParseIP(cfg.AdvertiseAddress)
	if ip == nil || ip.IsUnspecified() || ip.IsMulticast() {
		return nil, fmt.Errorf("--advertise-address %q: want one unicast IP address such as 10.250.0.1", cfg.AdvertiseAddress)
	}
	return ip, nil
}

func portOrFree(port int) (int, error) {
	if port != 0 {
		return port, nil
	}
	return freePort()
}
