package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/conformance"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/nodeagent"
	"github.com/volplane/volplane/internal/userdriver"
)

// conformanceFlags are `volplane conformance`'s own flags.
type conformanceFlags struct {
	nodes       int
	timeout     time.Duration
	output      string
	junit       string
	scenarios   []string
	dataDir     string
	keep        bool
	block       []string
	accessModes []string
	drivers     upDriverFlags
	faults      hostpath.Faults
}

func newConformanceCommand() *cobra.Command {
	var (
		f    = conformanceFlags{drivers: upDriverFlags{capacity: resource.MustParse("100Gi")}}
		user userdriver.Flags
	)
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run a CSI driver through the Kubernetes volume lifecycle on a fresh embedded cluster",
		Long: `Start a fresh embedded control plane with simulated nodes, as ` + "`up`" + ` does, with
your CSI driver (--driver or --driver-endpoint, as for up) or else the bundled
ones, and run the lifecycle scenarios that the driver's capabilities call
for: dynamic and static provisioning, both binding modes and topology, mount
and block, a pod writing data and another reading it on another node,
offline and online expansion, VolumeAttributesClass modify, clone, snapshot
and restore, group snapshot, each reclaim policy, and the driver's processes
killed mid-step (drivers volplane started). After each scenario the
invariant checker compares the cluster with the driver's own ListVolumes.

The report has one row per scenario: pass, fail, or skip with the missing
capability; each failure names the step, the CSI call and its error, and
what ` + "`volplane explain`" + ` says of the claim. Exit code 0 only if every scenario
that applies passed; 3 if one failed; 1 if the run could not start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if f.nodes < 1 {
				return fmt.Errorf("--nodes %d: want at least 1", f.nodes)
			}
			if f.output != "text" && f.output != "json" {
				return fmt.Errorf("-o %s: want text or json", f.output)
			}
			specs, err := userdriver.Parse(user, nodeNames(f.nodes))
			if err != nil {
				return err
			}
			facts, err := parseFacts(f, specs)
			if err != nil {
				return err
			}
			return runConformance(ctx, cmd, f, specs, facts)
		},
	}
	fl := cmd.Flags()
	addUserDriverFlags(fl, &user)
	fl.IntVar(&f.nodes, "nodes", 2, "number of simulated nodes (two let a volume move between nodes)")
	fl.DurationVar(&f.timeout, "timeout", conformance.DefaultTimeout, "how long one scenario may take, and apart from it its cleanup")
	fl.StringVarP(&f.output, "output", "o", "text", "report format: text or json")
	fl.StringVar(&f.junit, "junit", "", "also write the report as JUnit XML to this file, for CI")
	fl.StringArrayVar(&f.scenarios, "scenario", nil, "run only this scenario (by name, as the report names it); repeatable")
	fl.StringVar(&f.dataDir, "data-dir", "", "the lab's data dir (default: a new directory under /tmp, removed after a run that passed)")
	fl.BoolVar(&f.keep, "keep", false, "keep the data dir (logs, the drivers' output) even when every scenario passed")
	fl.StringArrayVar(&f.block, "driver-block", nil, "NAME: driver NAME takes raw block volumes (volumeMode Block; CSI does not report it); the bundled drivers do")
	fl.StringArrayVar(&f.accessModes, "driver-access-modes", nil, "NAME=MODE,...: the access modes driver NAME supports (default ReadWriteOnce)")
	f.faults = defaultConformanceFaults
	fl.Var(&faultsFlag{&f.faults}, "faults", `the faults of the faults scenario, injected by a proxy in front of the driver's controller sockets: seed=N,unavailable=P,timeout=P,delay=P,max-delay=D ("" skips the scenario)`)
	fl.BoolVar(&f.drivers.fakeMounts, "fake-mounts", false, "the bundled drivers record their mounts instead of asking the kernel (no root needed)")
	return cmd
}

// facts are what a user says of a driver that CSI does not report.
type facts struct {
	block bool
	modes []corev1.PersistentVolumeAccessMode
}

func parseFacts(f conformanceFlags, specs []userdriver.Spec) (map[string]facts, error) {
	out := map[string]facts{}
	named := func(flag, name string) error {
		if len(specs) == 0 || slices.ContainsFunc(specs, func(s userdriver.Spec) bool { return s.Name == name }) {
			return nil
		}
		return fmt.Errorf("%s %s: no --driver or --driver-endpoint names driver %q", flag, name, name)
	}
	for _, name := range f.block {
		if err := named("--driver-block", name); err != nil {
			return nil, err
		}
		fa := out[name]
		fa.block = true
		out[name] = fa
	}
	valid := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}
	for _, v := range f.accessModes {
		name, list, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("--driver-access-modes %s: want NAME=MODE,...", v)
		}
		if err := named("--driver-access-modes", name); err != nil {
			return nil, err
		}
		fa := out[name]
		for m := range strings.SplitSeq(list, ",") {
			mode := corev1.PersistentVolumeAccessMode(m)
			if !slices.Contains(valid, mode) {
				return nil, fmt.Errorf("--driver-access-modes %s: %q is not an access mode (ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod)", v, m)
			}
			fa.modes = append(fa.modes, mode)
		}
		out[name] = fa
	}
	return out, nil
}

func runConformance(ctx context.Context, cmd *cobra.Command, f conformanceFlags, specs []userdriver.Spec, facts map[string]facts) error {
	out, progress := cmd.OutOrStdout(), cmd.ErrOrStderr()
	chosen, err := chosenScenarios(f.scenarios)
	if err != nil {
		return err
	}
	dir := f.dataDir
	if dir == "" {
		var err error
		// Short: the drivers' sockets live under it.
		if dir, err = os.MkdirTemp("/tmp", "vp-conf-"); err != nil {
			return err
		}
	}
	began := time.Now()
	fmt.Fprintf(progress, "Starting a fresh embedded cluster with %d node(s) in %s ...\n", f.nodes, dir)
	cp, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Nodes: f.nodes})
	if err != nil {
		return err
	}
	passed := false
	defer func() {
		cp.Stop()
		if passed && !f.keep && f.dataDir == "" {
			_ = os.RemoveAll(dir)
			return
		}
		fmt.Fprintf(progress, "The lab's data dir, with its logs: %s\n", dir)
	}()
	drivers, err := startDrivers(context.WithoutCancel(ctx), cp, dir, f.drivers, specs, hostpath.Faults{})
	if err != nil {
		return err
	}
	defer drivers.Stop()
	proxies, err := startFaultProxies(dir, drivers.Endpoints, f.faults)
	if err != nil {
		return err
	}
	defer proxies.stop()
	loopsCtx, stopLoops := context.WithCancel(ctx)
	mcfg := upLoops(cp.RESTConfig, proxies.addresses(drivers.Endpoints), "", io.Discard)
	// down: the nodes the node-failure scenario took down, as the agent
	// sees them.
	var down nodeagent.DownNodes
	mcfg.NodeAgent = &manager.NodeAgent{DataDir: dir, Nodes: nodeagent.NodesServedBy(cp.Nodes, drivers.NodeEndpoints), UnmountOnStop: true,
		Down: down.Down, OnUp: down.OnUp}
	loops := make(chan error, 1)
	go func() { loops <- manager.Run(loopsCtx, mcfg) }()
	defer func() {
		stopLoops()
		if err := <-loops; err != nil {
			fmt.Fprintf(progress, "While stopping: %v\n", err)
		}
	}()
	snaps, err := snapclient.NewForConfig(cp.RESTConfig)
	if err != nil {
		return err
	}
	labs, err := conformanceLabs(ctx, cp, snaps, dir, drivers, facts, drivers.FakeMounts)
	if err != nil {
		return err
	}
	for _, lab := range labs {
		proxies.wire(lab)
		lab.NodeDown = nodeDown(cp, &down)
	}
	for _, lab := range labs {
		if err := waitRegistered(ctx, cp, lab.Driver, loops); err != nil {
			return err
		}
	}
	fmt.Fprintf(progress, "Lab up in %.1fs.\n", time.Since(began).Seconds())
	opts := conformance.Options{Timeout: f.timeout, Scenarios: chosen}
	var reports conformance.Reports
	for _, lab := range labs {
		opts.Done = func(r conformance.Result) {
			fmt.Fprintf(progress, "  %s %s: %s (%.1fs)\n", lab.Driver, r.Name, r.Status, r.Duration.Seconds())
		}
		reports = append(reports, conformance.Run(ctx, lab, opts))
	}
	if err := writeReports(out, f, reports); err != nil {
		return err
	}
	failed := reports.Failed()
	fmt.Fprintf(progress, "Conformance run took %.1fs.\n", time.Since(began).Seconds())
	if failed > 0 {
		return &exitError{code: exitFindings, err: fmt.Errorf("conformance: %d scenario(s) failed", failed)}
	}
	passed = true
	return nil
}

// chosenScenarios are the registry's scenarios that --scenario names, in
// the registry's order (nil: all), refused before the lab starts when a
// name is none of them.
func chosenScenarios(names []string) ([]conformance.Scenario, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var chosen []conformance.Scenario
	var all []string
	for _, sc := range conformance.Scenarios() {
		all = append(all, sc.Name)
		if slices.Contains(names, sc.Name) {
			chosen = append(chosen, sc)
		}
	}
	for _, n := range names {
		if !slices.Contains(all, n) {
			return nil, fmt.Errorf("--scenario %s: want one of %s", n, strings.Join(all, ", "))
		}
	}
	return chosen, nil
}

// writeReports writes the reports in the chosen format, and as JUnit XML
// where asked.
func writeReports(out io.Writer, f conformanceFlags, reports conformance.Reports) error {
	write := reports.WriteText
	if f.output == "json" {
		write = reports.WriteJSON
	}
	if err := write(out); err != nil {
		return err
	}
	if f.junit == "" {
		return nil
	}
	file, err := os.Create(f.junit)
	if err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	if err := reports.WriteJUnit(file); err != nil {
		_ = file.Close()
		return fmt.Errorf("--junit: %w", err)
	}
	return file.Close()
}

// nodeDown takes a node down as a crash would, or brings it up: its
// heartbeat and its node agent both. Down, the agent stops first, so
// nothing of it acts on a node already NotReady; up, the node reports
// Ready before the agent wakes.
func nodeDown(cp *cluster.ControlPlane, agent *nodeagent.DownNodes) func(context.Context, string, bool) error {
	return func(ctx context.Context, node string, down bool) error {
		if down {
			agent.Set(node, true)
			return cp.SetNodeDown(ctx, node, true)
		}
		err := cp.SetNodeDown(ctx, node, false)
		agent.Set(node, false)
		return err
	}
}

// conformanceLabs are the labs of the drivers under test: the user's, or
// else the two bundled ones.
func conformanceLabs(ctx context.Context, cp *cluster.ControlPlane, snaps snapclient.Interface, dir string, d *upDrivers, facts map[string]facts, mounter *hostpath.FakeMounter) ([]*conformance.Lab, error) {
	base := func(driver string, ctrl, node csi.Info, endpoints []string) *conformance.Lab {
		lab := &conformance.Lab{Client: cp.Client, Snapshots: snaps, Driver: driver, Controller: ctrl, Node: node,
			Nodes: cp.Nodes, Endpoints: endpoints, DataDir: dir, Block: facts[driver].block, AccessModes: facts[driver].modes}
		if mounter != nil {
			lab.DataPath = mounter.Resolve
		}
		return lab
	}
	if len(d.User) == 0 {
		network, local, err := bundledLabs(ctx, cp, d, base)
		if err != nil {
			return nil, err
		}
		return []*conformance.Lab{local, network}, nil
	}
	var labs []*conformance.Lab
	for _, u := range d.User {
		lab := base(u.Spec.Name, u.Controller, u.Node, d.Processes.Controllers[u.Spec.Name])
		lab.ImmediateClass, lab.WaitClass = u.Names.ImmediateClass, u.Names.WaitClass
		lab.SnapshotClass, lab.GroupSnapshotClass, lab.AttributesClass = u.Names.SnapshotClass, u.Names.GroupClass, u.Names.AttributesClass
		if u.Spec.Started() {
			name, perNode, first := u.Spec.Name, u.Spec.PerNode, cp.Nodes[0]
			lab.Restart = func(_ context.Context, role string) error {
				if role == userdriver.ControllerRole && perNode {
					role = first
				}
				return d.Processes.Restart(name, role)
			}
		}
		labs = append(labs, lab)
	}
	return labs, nil
}

// bundledLabs are the labs of the bundled drivers: the network driver
// (attached, one controller) and the node-local one (a controller per
// node). The network driver's WaitForFirstConsumer class is made here: up
// registers none.
func bundledLabs(ctx context.Context, cp *cluster.ControlPlane, d *upDrivers, base func(string, csi.Info, csi.Info, []string) *conformance.Lab) (network, local *conformance.Lab, err error) {
	nodes := len(cp.Nodes)
	probe := func(addr string) (csi.Info, error) {
		e, err := csi.Dial(ctx, addr, nil)
		if err != nil {
			return csi.Info{}, err
		}
		defer func() { _ = e.Close() }()
		return e.Info, nil
	}
	netCtrl := d.Endpoints[len(d.Endpoints)-1]
	first := cp.Nodes[0]
	var infos [4]csi.Info
	for i, addr := range []string{netCtrl, d.NodeEndpoints[first][1], d.Endpoints[0], d.NodeEndpoints[first][0]} {
		if infos[i], err = probe(addr); err != nil {
			return nil, nil, err
		}
	}
	// Both take raw block volumes (a loop device over a file).
	network = base(hostpath.NetworkDriverName, infos[0], infos[1], []string{netCtrl})
	network.Block = true
	network.ImmediateClass, network.WaitClass, network.SnapshotClass = bundle.NetworkClass, bundle.NetworkClass+"-wffc", bundle.NetworkSnapshotClass
	if err := conformance.EnsureWaitClass(ctx, cp.Client, network.ImmediateClass, network.WaitClass); err != nil {
		return nil, nil, err
	}
	local = base(hostpath.DriverName, infos[2], infos[3], d.Endpoints[:nodes])
	local.Block = true
	local.ImmediateClass, local.WaitClass = bundle.ImmediateClass, bundle.WaitClass
	local.SnapshotClass, local.GroupSnapshotClass, local.AttributesClass = bundle.SnapshotClass, bundle.GroupSnapshotClass, bundle.FastAttributes
	return network, local, nil
}

// waitRegistered waits until every node's CSINode lists the driver: the
// node agent registered it there, so the scheduler and the attacher know
// the node serves it.
func waitRegistered(ctx context.Context, cp *cluster.ControlPlane, driver string, loops <-chan error) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-loops:
			return false, fmt.Errorf("the loops stopped: %w", err)
		default:
		}
		for _, n := range cp.Nodes {
			c, err := cp.Client.StorageV1().CSINodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil || !slices.ContainsFunc(c.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver }) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("driver %s is not registered on every node's CSINode within a minute: %w", driver, err)
	}
	return nil
}

// defaultConformanceFaults fault one controller call in two: a fifth fail
// before they are done, a fifth are done and reported as timed out, a
// tenth are delayed up to half a second.
var defaultConformanceFaults = hostpath.Faults{Seed: 1, Unavailable: 0.2, TimedOut: 0.2, Delayed: 0.1, MaxDelay: 500 * time.Millisecond}

// faultProxies stand in front of every controller endpoint the loops dial,
// by the endpoint's address; none when faults are off.
type faultProxies map[string]*userdriver.FaultProxy

func startFaultProxies(dir string, endpoints []string, f hostpath.Faults) (faultProxies, error) {
	p := faultProxies{}
	if !f.Enabled() {
		return p, nil
	}
	sockets := filepath.Join(dir, "csi", "faults")
	if err := hostpath.MkdirPrivate(sockets); err != nil {
		return nil, err
	}
	for i, addr := range endpoints {
		proxy, err := userdriver.StartFaultProxy(filepath.Join(sockets, fmt.Sprintf("%d.sock", i)), addr, f)
		if err != nil {
			p.stop()
			return nil, err
		}
		p[addr] = proxy
	}
	return p, nil
}

// addresses are what the loops dial in place of endpoints.
func (p faultProxies) addresses(endpoints []string) []string {
	out := make([]string, len(endpoints))
	for i, addr := range endpoints {
		out[i] = addr
		if proxy, ok := p[addr]; ok {
			out[i] = proxy.Address
		}
	}
	return out
}

// wire gives a lab the switch and the count of the proxies in front of
// its driver's controller endpoints.
func (p faultProxies) wire(lab *conformance.Lab) {
	var mine []*userdriver.FaultProxy
	for _, addr := range lab.Endpoints {
		if proxy, ok := p[addr]; ok {
			mine = append(mine, proxy)
		}
	}
	if len(mine) == 0 {
		return
	}
	lab.Faults = func(on bool) {
		for _, proxy := range mine {
			proxy.SetFaults(on)
		}
	}
	lab.InjectedFaults = func() int64 {
		var n int64
		for _, proxy := range mine {
			n += proxy.Injected()
		}
		return n
	}
}

func (p faultProxies) stop() {
	for _, proxy := range p {
		proxy.Stop()
	}
}
