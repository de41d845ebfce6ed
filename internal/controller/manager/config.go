package manager

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"

	"github.com/volplane/volplane/internal/controller/binder"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/provisioner"
	"github.com/volplane/volplane/internal/endpoint"
	"github.com/volplane/volplane/internal/features"
)

// The loops by the names --controllers takes. The protection,
// attach/detach and expander loops have kube-controller-manager's names;
// attacher and resizer are the CSI sidecars' roles.
const (
	Binder        = "binder"
	Provisioner   = "provisioner"
	PVCProtection = "pvc-protection"
	PVProtection  = "pv-protection"
	AttachDetach  = "attachdetach"
	Attacher      = "attacher"
	Resizer       = "resizer"
	// Expander is kube-controller-manager's persistentvolume-expander: it
	// hands grown claims to the external resizer and calls no driver.
	Expander = "expander"
	// Snapshot is the snapshot-controller's role (VolumeSnapshot and
	// VolumeGroupSnapshot binding); Snapshotter the csi-snapshotter
	// sidecar's (the driver's snapshot and group snapshot calls).
	Snapshot    = "snapshot"
	Snapshotter = "snapshotter"
)

// Config says which loops to run against which cluster.
type Config struct {
	// REST is the client configuration, with QPS and Burst already set.
	REST        *rest.Config
	Controllers []string
	Workers     int
	// ResyncPeriod is the binder's safety-net resync.
	ResyncPeriod time.Duration
	// ProvisioningMarkAfter is how long a CreateVolume runs before the
	// provisioner marks its claim in progress (provisioner.Config.MarkAfter);
	// 0 marks every claim before its create.
	ProvisioningMarkAfter time.Duration
	// RecycleTimeout bounds a recycler pod's scrub (0: the binder's default).
	RecycleTimeout time.Duration
	// AttacherElsewhere says volplane's attacher serves the same CSI
	// endpoints in another manager (it always counts as there when the
	// attacher loop is selected here): the provisioner then creates PVs
	// of drivers that attach with the attacher's finalizer already on.
	AttacherElsewhere bool
	// MaxWaitForUnmount is how long attachdetach waits for a volume no pod
	// wants to be unmounted before it may force the detach from a node
	// that is not Ready (0: the reference's 6 minutes). Tests shorten it.
	MaxWaitForUnmount time.Duration
	// LeaderElect runs the loops only while holding the Lease
	// LeaderElectNamespace/LeaderElectName.
	LeaderElect          bool
	LeaderElectNamespace string
	LeaderElectName      string
	// LeaderElection holds the Lease timings; zero values take
	// kube-controller-manager's defaults (DefaultLeaderElection).
	LeaderElection LeaseTimings
	// HeartbeatPeriod is how often the provisioner and the snapshotter renew their heartbeat
	// Leases (internal/heartbeat), which live in LeaderElectNamespace
	// (kube-system if empty) also when leader election is off; 0:
	// heartbeat.DefaultPeriod. Tests shorten it.
	HeartbeatPeriod time.Duration
	// CSIEndpoints are the CSI drivers the provisioner serves, each
	// "unix:///absolute/path"; several endpoints may report the same driver
	// name (one per node of a node-local driver).
	CSIEndpoints []string
	// NodeDeployment, if set, runs the provisioner (and the attacher, the
	// resizer and the snapshotter) beside one node's driver: CSIEndpoints
	// are that node's, and only its claims, volumes and attachments are
	// served (provisioner.NodeDeployment).
	// Only those loops (NodeLoops) may run so, without leader election: every
	// node runs its own.
	NodeDeployment *provisioner.NodeDeployment
	// Capacity holds the capacity loop's settings.
	Capacity CapacitySettings
	// NodeAgent, if set, also runs the node agent of simulated nodes
	// (`volplane up`, the test harness) over the same informers. It is not
	// one of --controllers: a real cluster's nodes have kubelets.
	NodeAgent *NodeAgent
	// SnapshotControllerElsewhere says what the snapshot loop does when
	// the cluster already runs a snapshot-controller or serves no v1 group
	// snapshot API: "refuse" (also "") or "ignore"
	// (snapshotbinding.Elsewhere).
	SnapshotControllerElsewhere string
	// HealthMonitorInterval is the health-monitor's poll period (0: the
	// external-health-monitor's 1 minute).
	HealthMonitorInterval time.Duration
	// MetricsAddr serves /metrics, /healthz and /readyz; "" serves nothing.
	MetricsAddr string
	// Profiling also serves Go's profiles under /debug/pprof on MetricsAddr.
	// Off by default: a profile costs CPU and shows internals.
	Profiling bool
	// Ready, if set, is told the address the metrics server listens on
	// (useful with port 0).
	Ready func(metricsAddr string)
	// Features are the Kubernetes feature gates the loops read
	// (internal/features, --feature-gates); nil: Kubernetes v1.37's
	// defaults (features.Defaults).
	Features featuregate.FeatureGate
}

// Gates are c.Features, or the defaults when none were given.
func (c Config) Gates() featuregate.FeatureGate { return features.Or(c.Features) }

// DefaultConfig is what `volplane controller` runs with no flags, and the
// one place its defaults are written: the binder alone, leader-elected
// under kube-system/volplane-controller with kube-controller-manager's
// timings, the loops' shared worker and resync defaults, the
// provisioner's mark delay, metrics on
// 127.0.0.1:9742. REST and CSIEndpoints are left to the caller.
func DefaultConfig() Config {
	return Config{
		Controllers:  []string{Binder},
		Workers:      loop.DefaultWorkers,
		ResyncPeriod: loop.DefaultResyncPeriod, RecycleTimeout: binder.DefaultRecycleTimeout,
		ProvisioningMarkAfter: provisioner.DefaultMarkAfter,
		LeaderElect:           true, LeaderElectNamespace: "kube-system", LeaderElectName: "volplane-controller",
		LeaderElection: DefaultLeaderElection,
		MetricsAddr:    "127.0.0.1:9742",
	}
}

// Validate rejects a config that cannot run, with the reason.
func (c Config) Validate() error {
	if c.REST == nil {
		return errors.New("no cluster configuration")
	}
	if len(c.Controllers) == 0 && c.NodeAgent == nil {
		return errors.New("no controllers selected")
	}
	if c.NodeAgent != nil {
		if err := c.NodeAgent.validate(c); err != nil {
			return err
		}
	}
	for _, name := range c.Controllers {
		if !slices.Contains(Known(), name) {
			return fmt.Errorf("controller %q is not implemented yet (available: %s)", name, strings.Join(Known(), ", "))
		}
	}
	for _, r := range selectedRows(c) {
		if r.needs == NeedsDrivers && len(c.CSIEndpoints) == 0 {
			return fmt.Errorf("the %s needs at least one CSI endpoint (--csi-endpoint unix:///path/to/csi.sock)", r.name)
		}
	}
	for _, e := range c.CSIEndpoints {
		if _, err := endpoint.Parse(e); err != nil {
			return err
		}
	}
	if e := c.SnapshotControllerElsewhere; e != "" && e != "refuse" && e != "ignore" {
		return fmt.Errorf("snapshot controller elsewhere %q: want refuse or ignore", e)
	}
	if err := c.validateNodeDeployment(); err != nil {
		return err
	}
	if c.ProvisioningMarkAfter < 0 {
		return fmt.Errorf("provisioning mark delay %s: want 0 (mark before every create) or a positive duration", c.ProvisioningMarkAfter)
	}
	if c.HeartbeatPeriod < 0 {
		return fmt.Errorf("heartbeat period %s: want a positive duration, or 0 for the default", c.HeartbeatPeriod)
	}
	if c.LeaderElect && (c.LeaderElectNamespace == "" || c.LeaderElectName == "") {
		return errors.New("leader election needs a namespace and a lease name")
	}
	if c.LeaderElect {
		return c.LeaderElection.orDefaults().validate()
	}
	return nil
}

// NodeLoops are the loops that may run in node deployment: those that
// call a node-local driver for a node's own volumes (and the attacher, for
// its own node's attachments). The health-monitor is there too: a
// node-local driver's controller service runs on each node, where the
// external-health-monitor would be deployed beside it.
func NodeLoops() []string {
	return []string{Provisioner, Capacity, Attacher, Resizer, Snapshotter, HealthMonitor}
}

func (c Config) validateNodeDeployment() error {
	if c.NodeDeployment == nil {
		return nil
	}
	if err := c.NodeDeployment.Validate(); err != nil {
		return err
	}
	for _, name := range c.Controllers {
		if !slices.Contains(NodeLoops(), name) {
			loops := NodeLoops()
			return fmt.Errorf("node deployment runs only %s and %s beside a node's driver; run %s in the central controller",
				strings.Join(loops[:len(loops)-1], ", "), loops[len(loops)-1], name)
		}
	}
	if c.LeaderElect {
		return errors.New("node deployment runs one provisioner per node, which must not share a Lease: turn leader election off")
	}
	return nil
}

// nodeName is the node of a node deployment, "" without one.
func (c Config) nodeName() string {
	if c.NodeDeployment == nil {
		return ""
	}
	return c.NodeDeployment.NodeName
}
