package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/volplane/volplane/internal/controller/capacity"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/controller/provisioner"
	"github.com/volplane/volplane/internal/features"
)

// controllerFlags are the flags of `volplane controller`; `up` reuses the
// loop settings.
type controllerFlags struct {
	kubeconfig string
	qps        float32
	burst      int
	cpuProfile string
	cfg        manager.Config
	node       nodeFlags
}

// nodeFlags are the flags of node deployment (the external-provisioner's
// --node-deployment and its companions).
type nodeFlags struct {
	enabled   bool
	name      string
	immediate bool
	base, max time.Duration
}

// startCPUProfile profiles the process into path until the returned stop.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func newControllerCommand() *cobra.Command {
	f := controllerFlags{cfg: manager.DefaultConfig()}
	d := manager.DefaultConfig()
	gates := features.New()
	f.cfg.Features = gates
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the volume control loops against a cluster",
		Long: `Runs volplane's control loops against any Kubernetes cluster.

Without --kubeconfig and with KUBECONFIG unset it uses the in-cluster
configuration. Turn off the matching loops of the cluster's
kube-controller-manager first (for the binder: --controllers=*,-persistentvolume-binder;
for the protection loops: -pvc-protection,-pv-protection; for attachdetach: -attachdetach;
for the expander: -persistentvolume-expander; for ephemeral-volume: -ephemeral-volume;
for vac-protection: -volumeattributesclass-protection-controller), or two controllers
will fight over the same objects (or, for the expander, announce every expansion twice).

--feature-gates takes kube-controller-manager's gates the loops read, with
Kubernetes v1.37's defaults (PersistentVolumeClaimUnusedSinceTime on: pvc-protection
keeps the claim condition Unused; CSIVolumeHealth off).

The provisioner, the attacher and the resizer serve the CSI drivers behind
--csi-endpoint (their names come from the drivers); turn off the
external-provisioner, external-attacher and external-resizer sidecars of
those drivers first. On a real cluster a driver is served one of two ways:

  A central driver (one controller service for the whole cluster): run
  --controllers provisioner,attacher,resizer --csi-endpoint unix:///path/csi.sock
  as a sidecar beside the driver's controller, on a shared socket, with
  leader election on if it has replicas.

  A node-local driver (volumes live on the node its driver runs on): run
  --node-deployment --node-name=$(NODE_NAME) --controllers provisioner[,attacher][,resizer][,snapshotter][,health-monitor]
  beside each node's driver (a DaemonSet), with that node's socket as the
  only --csi-endpoint. Each provisioner handles the claims whose selected
  node is its node, and deletes (and the resizer expands) only the volumes
  whose node affinity points at its node; the attacher attaches (through
  its node's driver, for a driver whose CSIDriver has attachRequired) only
  the VolumeAttachments whose spec.nodeName is its node; the snapshotter serves the
  snapshot contents labelled snapshot.storage.kubernetes.io/managed-by with
  its node, or whose source volume (or snapshot) is on its node; the health-monitor
  reports on the volumes whose node affinity points at its node. Claims of an Immediate class have
  no selected node: every node that can serve one (the Node carries its
  driver's topology, the class's allowedTopologies admit it) waits a delay,
  then writes itself as the selected node with the claim's resourceVersion;
  one write wins, the others conflict. The delay is a random part of
  --node-deployment-base-delay, one base delay more for each claim the node
  won lately, doubled after a conflict, at most --node-deployment-max-delay.
  Leader election is off in this mode; the binder and the other loops run
  once, in a central volplane controller.

Leader election is on by default, as in kube-controller-manager: replicas
share the Lease --leader-elect-namespace/--leader-elect-name, one runs the
loops and the others wait to take over; SIGTERM releases the Lease at once.
Use --leader-elect=false only where one instance is guaranteed.

While the provisioner or the snapshotter runs (on the leader only) it renews
a heartbeat Lease per driver (one per driver and node with
--node-deployment) in --leader-elect-namespace, every 10 s, and deletes it on
exit (volplane-provisioner-<driver>[--<node>],
volplane-snapshotter-<driver>[--<node>]): volplane explain reads them to say
whether a claim's provisioner or a snapshot's snapshotter is running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if err := f.applyNode(cmd.Flags()); err != nil {
				return err
			}
			rc, err := loadRESTConfig(f.kubeconfig)
			if err != nil {
				return err
			}
			f.cfg.REST = f.limit(rc)
			f.cfg.Capacity.OwnerPod = capacityOwnerPod(f.cfg.Capacity.OwnerLevels)
			if err := f.cfg.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			f.cfg.Ready = func(addr string) {
				fmt.Fprintf(cmd.OutOrStdout(), "Serving /metrics, /healthz and /readyz on http://%s\n", addr)
			}
			if f.cpuProfile != "" {
				stopProfile, err := startCPUProfile(f.cpuProfile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			return manager.Run(ctx, f.cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, else in-cluster)")
	fl.Float32Var(&f.qps, "kube-api-qps", 20, "API requests per second allowed to the controllers, client side (events have their own budget); 0 or less: no client-side limit, the API server's priority and fairness still applies")
	fl.IntVar(&f.burst, "kube-api-burst", 30, "API request burst allowed to the controllers (ignored without a --kube-api-qps limit)")
	fl.StringSliceVar(&f.cfg.Controllers, "controllers", d.Controllers,
		"control loops to run: "+strings.Join(manager.Known(), ", "))
	fl.StringArrayVar(&f.cfg.CSIEndpoints, "csi-endpoint", nil,
		"a CSI driver's socket, unix:///absolute/path, for the provisioner, the attacher and the resizer; repeat for several (one per node of a node-local driver whose nodes are all this machine, as in up; on a real cluster see --node-deployment)")
	fl.IntVar(&f.cfg.Workers, "workers", d.Workers, "workers per queue (claims and volumes each)")
	fl.DurationVar(&f.cfg.ResyncPeriod, "resync-period", d.ResyncPeriod, "how often objects not at rest are revisited")
	fl.DurationVar(&f.cfg.ProvisioningMarkAfter, "provisioning-mark-after", d.ProvisioningMarkAfter,
		"how long a CreateVolume may run before the provisioner marks its claim in progress (a finalizer, the endpoint, the request: a claim deleted after a crash then cannot leak the volume); a create answered sooner writes nothing to the claim, as the external-provisioner; 0: mark every claim before its create (two claim writes more per provision)")
	registerHealthMonitorInterval(fl, &f.cfg.HealthMonitorInterval)
	fl.DurationVar(&f.cfg.RecycleTimeout, "recycle-timeout", d.RecycleTimeout, "how long a recycler pod may scrub a volume (policy Recycle) before the volume is Failed")
	fl.BoolVar(&f.cfg.LeaderElect, "leader-elect", d.LeaderElect,
		"run the loops only while holding a coordination.k8s.io Lease, so that replicas never run two binders at once (as kube-controller-manager)")
	fl.StringVar(&f.cfg.LeaderElectNamespace, "leader-elect-namespace", d.LeaderElectNamespace, "namespace of the leader election Lease, and of the provisioner's and snapshotter's heartbeat Leases (also with --leader-elect=false)")
	fl.StringVar(&f.cfg.LeaderElectName, "leader-elect-name", d.LeaderElectName, "name of the leader election Lease")
	le := &f.cfg.LeaderElection
	fl.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration,
		"how long replicas wait after the leader's last renewal before one takes over")
	fl.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline,
		"how long the leader tries to renew its Lease before it stops leading; less than the lease duration")
	fl.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "pause between two tries to acquire or renew the Lease")
	fl.StringVar(&f.cfg.MetricsAddr, "metrics-bind-address", d.MetricsAddr, `address of /metrics, /healthz and /readyz ("" disables)`)
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (for volplane bench)")
	_ = fl.MarkHidden("cpuprofile")
	fl.BoolVar(&f.node.enabled, "node-deployment", false,
		"run beside one node's node-local driver: serve only that node's claims, volumes, attachments and snapshot contents (see above); needs --node-name")
	fl.StringVar(&f.node.name, "node-name", "", "the Kubernetes node this process runs on, with --node-deployment (default: $NODE_NAME)")
	fl.BoolVar(&f.node.immediate, "node-deployment-immediate-binding", true,
		"with --node-deployment, race the other nodes for claims of Immediate classes (false: only claims the scheduler assigned to this node)")
	fl.DurationVar(&f.node.base, "node-deployment-base-delay", provisioner.DefaultNodeDeploymentBaseDelay,
		"with --node-deployment, the scale of the wait before claiming an Immediate claim: a random part of it when idle, one more for each claim won lately")
	fl.DurationVar(&f.node.max, "node-deployment-max-delay", provisioner.DefaultNodeDeploymentMaxDelay,
		"with --node-deployment, the longest wait before claiming an Immediate claim")
	fl.StringVar(&f.cfg.SnapshotControllerElsewhere, "snapshot-controller-elsewhere", "refuse",
		"what --controllers snapshot does on a cluster that already runs a snapshot-controller (its Lease snapshot-controller-leader renewed lately) or serves no v1 group snapshot API: refuse to start, or ignore it")
	fl.DurationVar(&f.cfg.Capacity.PollInterval, "capacity-poll-interval", capacity.DefaultPollInterval,
		"with --controllers capacity, how often every driver's GetCapacity is asked again (besides at once after a provision or delete on a segment)")
	fl.BoolVar(&f.cfg.Capacity.Immediate, "capacity-for-immediate-binding", false,
		"with --controllers capacity, also publish CSIStorageCapacity objects for Immediate classes (the scheduler reads them only for WaitForFirstConsumer claims)")
	fl.StringVar(&f.cfg.Capacity.Namespace, "capacity-namespace", os.Getenv("NAMESPACE"),
		"with --controllers capacity, the namespace of the CSIStorageCapacity objects (default: $NAMESPACE, else --leader-elect-namespace)")
	fl.IntVar(&f.cfg.Capacity.OwnerLevels, "capacity-ownerref-level", 1,
		"with --controllers capacity and $POD_NAME and $NAMESPACE set (the pod this runs in), the owner of the CSIStorageCapacity objects, counted from that pod: 0 the pod, 1 its StatefulSet or DaemonSet, 2 a Deployment; -1 (or no $POD_NAME): no owner")
	fl.BoolVar(&f.cfg.Profiling, "profiling", false, "also serve Go's CPU, heap and goroutine profiles under /debug/pprof on the metrics address")
	features.AddFlag(gates, fl)
	return cmd
}

// loadRESTConfig follows the CLI contract: --kubeconfig, else $KUBECONFIG,
// else the in-cluster configuration.
func loadRESTConfig(path string) (*rest.Config, error) {
	if path == "" && os.Getenv("KUBECONFIG") == "" {
		rc, err := rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, errors.New("no cluster: pass --kubeconfig, set KUBECONFIG, or run inside a cluster")
		}
		return rc, err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return rc, nil
}

// check rejects flag values the loops would otherwise quietly replace with
// their defaults.
func (f *controllerFlags) check() error {
	switch {
	case f.cfg.Workers < 1:
		return fmt.Errorf("--workers %d: want at least 1", f.cfg.Workers)
	case f.cfg.ResyncPeriod <= 0:
		return fmt.Errorf("--resync-period %s: want a positive duration such as 15s", f.cfg.ResyncPeriod)
	case f.cfg.RecycleTimeout <= 0:
		return fmt.Errorf("--recycle-timeout %s: want a positive duration such as 5m", f.cfg.RecycleTimeout)
	case f.qps > 0 && f.burst < 1:
		return fmt.Errorf("--kube-api-burst %d: want at least 1 while --kube-api-qps limits requests", f.burst)
	}
	return nil
}

// applyNode puts the node deployment flags into the config: the node's
// name from $NODE_NAME if not given, leader election off unless asked for
// (which Validate then refuses, with the reason).
func (f *controllerFlags) applyNode(fl *pflag.FlagSet) error {
	if !f.node.enabled {
		for _, name := range []string{"node-name", "node-deployment-immediate-binding", "node-deployment-base-delay", "node-deployment-max-delay"} {
			if fl.Changed(name) {
				return fmt.Errorf("--%s is used only with --node-deployment", name)
			}
		}
		return nil
	}
	name := f.node.name
	if name == "" {
		name = os.Getenv("NODE_NAME")
	}
	f.cfg.NodeDeployment = &provisioner.NodeDeployment{NodeName: name, ImmediateBinding: f.node.immediate,
		BaseDelay: f.node.base, MaxDelay: f.node.max}
	if !fl.Changed("leader-elect") {
		f.cfg.LeaderElect = false
	}
	return nil
}

// limit applies the client-side limits of the flags to rc. client-go reads
// QPS 0 as "the default, 5/s" and only a negative QPS as "no limiter", so
// "0 or less: no limit" is spelled QPS -1 here. Responses come
// uncompressed, as kube-controller-manager and kube-scheduler ask for them
// (DisableCompression): next to the API server gzip only costs CPU at both
// ends (at 100,000 claims the expander spent a tenth of its CPU
// gunzipping its informers' initial streams).
func (f *controllerFlags) limit(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = f.qps, f.burst
	if f.qps <= 0 {
		rc.QPS, rc.RateLimiter = -1, nil
	}
	rc.UserAgent = "volplane-controller"
	rc.DisableCompression = true
	return rc
}

// capacityOwnerPod is "namespace/name" of the pod the controller runs in,
// from $NAMESPACE and $POD_NAME as the external-provisioner reads them, when
// the capacity loop's objects are to be owned (level >= 0); "" otherwise.
func capacityOwnerPod(level int) string {
	ns, pod := os.Getenv("NAMESPACE"), os.Getenv("POD_NAME")
	if level < 0 || ns == "" || pod == "" {
		return ""
	}
	return ns + "/" + pod
}
