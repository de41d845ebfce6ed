package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/volplane/volplane/bench"
)

func newBenchCommand() *cobra.Command {
	o := bench.Options{}
	var out string
	var pods int
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the binder on a fresh embedded control plane, optionally side by side with the reference",
		Long: `Starts its own embedded control plane, creates a workload, runs volplane's
binder (as "volplane controller" in a child process, so its CPU and memory are
its own) and reports: time to bind all, binds/s, p50/p90/p99 time to Bound,
API writes per bind, the controller's CPU per bind and its peak RSS.

Scenarios:
  static   --pairs PVs and claims exist before the controller starts
  trickle  --pairs claims wait; their PVs arrive one by one at --rate per second
  dynamic  --pairs claims of the bundled node-local driver's class, created
           once the controllers are ready, each timed from its POST until
           Bound (and until a PV naming it is seen). It compares
           PROVISIONERS: volplane's provisioner against external-provisioner
           v6.4.0 (with --compare; from the binary
           volplane-reference-provisioner, next to volplane or on $PATH: go
           build ./bench/cmd/volplane-reference-provisioner), each the measured
           process, talking to the same driver endpoint, at the
           external-provisioner's limits (5/10) unless --qps or --burst is
           given (--qps 0: unthrottled). Both sides run the same binder,
           volplane's (with its protection loops), unthrottled and not
           measured; the API writes counted include the binder's
  churn    --pairs claims created, bound and deleted continuously (Delete policy)
  snapshot --pairs bound claims of the bundled node-local driver, each with a
           VolumeSnapshot (default class), made ready to use by volplane's
           snapshot and snapshotter loops (two processes, both measured) or,
           with --compare, by external-snapshotter v8.6.0's snapshot-controller
           and csi-snapshotter; its limits default to theirs (--qps 5 --burst 10);
           writes are counted until every claim's pvc-as-source-protection
           finalizer and every being-created annotation is gone
  attach   --pairs bound claims of the bundled network driver (volumes made by
           its controller service) on --nodes simulated nodes, each with a
           CSINode; the clock starts when --pairs pods, already placed (pod i
           on node i mod --nodes), are created; done when every
           VolumeAttachment is attached. volplane runs attachdetach (at
           kube-controller-manager's limits, 20/30) and the attacher (at the
           external-attacher's, 5/10), two processes, both measured; --compare
           runs kube-controller-manager v1.37.2's attach/detach controller
           inside the control plane and external-attacher v4.13.0, talking to
           the same driver endpoint (external-attacher runs from the binary
           volplane-reference-attacher, next to volplane or on $PATH: go build
           ./bench/cmd/volplane-reference-attacher). Only the external-attacher's
           CPU and RSS are measured there: the attach/detach controller shares its
           process with the API server, so its CPU is NOT included (its API
           writes are: VolumeAttachment and PV writes and node status patches
           are counted from the API server). --qps/--burst, when given, set
           both roles' limits; --qps 0: both unthrottled
  expand   --pairs bound, unused claims of the bundled node-local driver's
           class (volumes made by its controller service, which expands
           them alone: no node expansion); the clock starts when every
           claim's request is raised at once (1Mi to 2Mi), and each claim
           counts from its PATCH until a claim watch sees status.capacity at
           2Mi. volplane runs the expander (at kube-controller-manager's
           limits, 20/30) and the resizer (at the external-resizer's, 5/10),
           two processes, both measured; --compare runs
           kube-controller-manager v1.37.2's persistentvolume-expander inside
           the control plane and external-resizer v2.3.0, talking to the same
           driver endpoint (external-resizer runs from the binary
           volplane-reference-resizer, next to volplane or on $PATH: go build
           ./bench/cmd/volplane-reference-resizer). Only the external-resizer's
           CPU and RSS are measured there: the expand controller shares its
           process with the API server, so its CPU is NOT included (its API
           writes are). --qps/--burst, when given, set both roles' limits;
           --qps 0: both unthrottled
  protection --pairs unused claims (Pending, no binder runs) and --pairs free
           PVs, each with its protection finalizer; the clock starts when
           all are deleted at once, and pair i counts from its claim's DELETE
           until both claim i and PV i are gone. volplane runs its
           pvc-protection and pv-protection loops, each a measured process at
           kube-controller-manager's limits, 20/30 (which gives each of its
           loops a client of its own), unless --qps or --burst is given; --compare runs kube-controller-manager v1.37.2's
           pvc-protection and pv-protection loops inside the control plane:
           the reference then has NO measured process (its CPU and RSS read
           0), only its API writes are counted. The ceiling is measured on
           volplane's side only
  cluster  volplane up --nodes N (default 1000) --fake-mounts in a child
           process, driven through its kubeconfig: --pairs claims (default 100,000) of the
           network class, all Bound; then --pods pods (default 10,000), each
           using one of them, placed by the scheduler, all Running; then half
           of the pods deleted with their claims and recreated under new
           names, until all run again and every deleted claim's volume is
           reclaimed; then the invariant checker. Reports start time, times
           to all Bound and Running, API writes per pod, CPU and peak RSS of
           up and of the bench client, and the cores left idle; -o writes
           cluster.json. --compare, --qps and the other scenarios' flags do
           not apply
In churn, volplane's provisioner and protection loops run in a process of
their own, the same on both sides, and are not measured.

In static, trickle and churn, --compare runs kube-controller-manager v1.37.2's
PersistentVolumeController (the reference binder, built into this binary) on
the same workload against another fresh control plane with the same client
limits, and prints both side by side: the binder comparison lives there.
Except for churn, the API server's ceiling is measured too: its sustained write
rate for the same kinds from a trivial writer, on the store the run left, so
every result is also a fraction of what the API server allows. Every side also
reports its control plane's CPU per bind (the side's own process: API server,
etcd, the bundled driver, the workload's client, and kube-controller-manager's
loops where the reference runs them there) and how busy the machine's cores
were meanwhile: a side below the ceiling on a machine that was full was held
back by the CPU the API server needed, not by its controllers.

Each side stops at --timeout; what was bound by then is reported and marked
incomplete (useful at 20 QPS, where 100,000 binds take hours).`,
		Example: `  volplane bench --pairs 1000 --compare
  volplane bench --scenario trickle --pairs 500 --rate 20
  volplane bench --scenario attach --pairs 1000 --nodes 10 --compare
  volplane bench --scenario dynamic --pairs 1000 --compare
  volplane bench --scenario expand --pairs 1000 --compare
  volplane bench --scenario protection --pairs 1000 --compare
  volplane bench --scenario cluster --nodes 100 --pairs 1000 --pods 100
  volplane bench --pairs 10000 --qps 20 --burst 30 --timeout 3m --compare -o results/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the volplane executable: %w", err)
			}
			o.Executable = exe
			if o.Scenario == bench.Cluster {
				return runClusterBench(cmd, o, pods, out)
			}
			if cmd.Flags().Changed("pods") {
				return fmt.Errorf("--pods is only for --scenario cluster, not %s", o.Scenario)
			}
			if err := setAttachOptions(cmd, &o); err != nil {
				return err
			}
			if err := setExpandOptions(cmd, &o); err != nil {
				return err
			}
			if err := setDynamicOptions(cmd, &o); err != nil {
				return err
			}
			if o.Scenario == bench.Protection && !cmd.Flags().Changed("qps") && !cmd.Flags().Changed("burst") {
				// kube-controller-manager's limits, whose loops it replaces.
				o.QPS, o.Burst = bench.ProtectionQPS, bench.ProtectionBurst
			}
			if o.Scenario == bench.Snapshot {
				// The snapshot controllers' own defaults, unless asked otherwise.
				if !cmd.Flags().Changed("qps") {
					o.QPS = bench.SnapshotterQPS
				}
				if !cmd.Flags().Changed("burst") {
					o.Burst = bench.SnapshotterBurst
				}
			}
			o.Progress = cmd.ErrOrStderr()
			if err := o.Validate(); err != nil {
				return err
			}
			return runAndReport(cmd, out, func(ctx context.Context) (bench.Report, error) { return bench.Run(ctx, o) },
				bench.WriteFiles, "report.json and "+out+"/bound.png")
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Scenario, "scenario", bench.Static, "workload: "+strings.Join(append(bench.Scenarios(), bench.Cluster), ", "))
	fl.IntVar(&o.Pairs, "pairs", 1000, "claims to bind (and, for static and trickle, PVs made for them)")
	fl.Float32Var(&o.QPS, "qps", 0, "client QPS of the controllers under test, as --kube-api-qps; 0: unthrottled (the reference's own default is 20; snapshot and dynamic: 5, the default there; attach and expand: each role at its reference's limits, 20/30 and 5/10, unless --qps or --burst is given; protection: 20/30 unless either is given)")
	fl.IntVar(&o.Burst, "burst", 30, "client burst of the controllers under test (with --qps; snapshot and dynamic: 10, the default there)")
	fl.IntVar(&o.Nodes, "nodes", bench.DefaultAttachNodes, "attach: simulated nodes the pods are spread over; cluster: up's --nodes (default 1000 there)")
	fl.IntVar(&pods, "pods", bench.DefaultClusterPods, "cluster: pods, each using one of the claims (only for the cluster scenario)")
	fl.StringVar(&o.ReferenceAttacher, "reference-attacher", "", "attach --compare: the volplane-reference-attacher binary (default: next to volplane, else on $PATH)")
	fl.StringVar(&o.ReferenceResizer, "reference-resizer", "", "expand --compare: the volplane-reference-resizer binary (default: next to volplane, else on $PATH)")
	fl.StringVar(&o.ReferenceProvisioner, "reference-provisioner", "", "dynamic --compare: the volplane-reference-provisioner binary (default: next to volplane, else on $PATH)")
	fl.IntVar(&o.Workers, "workers", 0, "volplane's --workers (0: its default)")
	fl.BoolVar(&o.Compare, "compare", false, "also run the reference controller, on an identical fresh control plane")
	fl.Float64Var(&o.Rate, "rate", 20, "trickle: PVs created per second")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "longest measurement per side; what is bound by then is reported")
	fl.StringVarP(&out, "output", "o", "", "directory for report.json and bound.png (claims Bound over time)")
	fl.StringVar(&o.MemoryLimit, "memory-limit", "", "GOMEMLIMIT of the controller under test, both sides (e.g. 900MiB): Go's soft memory limit, trading CPU for peak RSS")
	fl.StringVar(&o.Profile, "profile", "", "profile volplane's controller: its whole run's CPU to PREFIX.cpu.pprof, its heap at the end to PREFIX.heap.pprof (PREFIX: an absolute path); cluster: up's, every 5 minutes, a 30 s CPU profile to PREFIX.NN.cpu.pprof and its heap to PREFIX.NN.heap.pprof")
	cmd.AddCommand(newBenchReferenceCommand(), newBenchSideCommand())
	cmd.AddCommand(newBenchReferenceSnapshotCommands()...)
	return cmd
}

// runClusterBench runs --scenario cluster: its defaults where a flag is
// not given, the run, the report.
func runClusterBench(cmd *cobra.Command, o bench.Options, pods int, out string) error {
	fl := cmd.Flags()
	co := bench.ClusterOptions{Executable: o.Executable, Nodes: o.Nodes, Claims: o.Pairs, Pods: pods,
		Timeout: o.Timeout, Progress: cmd.ErrOrStderr(), Profile: o.Profile, ProfileEvery: 5 * time.Minute}
	if !fl.Changed("nodes") {
		co.Nodes = bench.DefaultClusterNodes
	}
	if !fl.Changed("pairs") {
		co.Claims = bench.DefaultClusterClaims
	}
	for _, name := range []string{"compare", "qps", "burst", "rate", "workers", "memory-limit", "reference-attacher", "reference-resizer", "reference-provisioner"} {
		if fl.Changed(name) {
			return fmt.Errorf("--%s does not apply to --scenario cluster", name)
		}
	}
	if err := co.Validate(); err != nil {
		return err
	}
	return runAndReport(cmd, out, func(ctx context.Context) (*bench.ClusterReport, error) { return bench.RunCluster(ctx, co) },
		bench.WriteClusterFiles, bench.ClusterReportJSON)
}

// runAndReport runs a bench until it ends or is interrupted, prints its
// report and, with -o, writes its files into out (wrote names them after
// "out/").
func runAndReport[R interface{ WriteText(io.Writer) error }](cmd *cobra.Command, out string,
	run func(context.Context) (R, error), write func(R, string) error, wrote string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := run(ctx)
	if err != nil {
		return err
	}
	if err := r.WriteText(cmd.OutOrStdout()); err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	if err := write(r, out); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Wrote %s/%s\n", out, wrote)
	return nil
}

// setAttachOptions applies --nodes and the attach scenario's limits: each
// role at the limits of the process it replaces unless --qps or --burst
// says otherwise, then both at those.
func setAttachOptions(cmd *cobra.Command, o *bench.Options) error {
	fl := cmd.Flags()
	if o.Scenario != bench.Attach {
		if fl.Changed("nodes") {
			return fmt.Errorf("--nodes is only for --scenario attach, not %s", o.Scenario)
		}
		o.Nodes = 0
	}
	if ours, err := referenceOption(cmd, o, bench.Attach, "reference-attacher", &o.ReferenceAttacher, bench.FindReferenceAttacher); !ours || err != nil {
		return err
	}
	if fl.Changed("qps") || fl.Changed("burst") {
		o.AttacherQPS, o.AttacherBurst = o.QPS, o.Burst
		return nil
	}
	o.QPS, o.Burst = bench.AttachDetachQPS, bench.AttachDetachBurst
	o.AttacherQPS, o.AttacherBurst = bench.AttacherQPS, bench.AttacherBurst
	return nil
}

// setExpandOptions applies the expand scenario's limits: the expander at
// kube-controller-manager's and the resizer at the external-resizer's
// unless --qps or --burst says otherwise, then both at those.
func setExpandOptions(cmd *cobra.Command, o *bench.Options) error {
	fl := cmd.Flags()
	if ours, err := referenceOption(cmd, o, bench.Expand, "reference-resizer", &o.ReferenceResizer, bench.FindReferenceResizer); !ours || err != nil {
		return err
	}
	if fl.Changed("qps") || fl.Changed("burst") {
		o.ResizerQPS, o.ResizerBurst = o.QPS, o.Burst
		return nil
	}
	o.QPS, o.Burst = bench.ExpanderQPS, bench.ExpanderBurst
	o.ResizerQPS, o.ResizerBurst = bench.ResizerQPS, bench.ResizerBurst
	return nil
}

// setDynamicOptions applies the dynamic scenario's limits: the
// external-provisioner's for the provisioner under test, unless --qps or
// --burst says otherwise.
func setDynamicOptions(cmd *cobra.Command, o *bench.Options) error {
	fl := cmd.Flags()
	if ours, err := referenceOption(cmd, o, bench.Dynamic, "reference-provisioner", &o.ReferenceProvisioner, bench.FindReferenceProvisioner); !ours || err != nil {
		return err
	}
	if !fl.Changed("qps") {
		o.QPS = bench.ProvisionerQPS
	}
	if !fl.Changed("burst") {
		o.Burst = bench.ProvisionerBurst
	}
	return nil
}

// referenceOption refuses a scenario's --reference-* flag under another
// scenario and, for a --compare run of the scenario, finds the reference
// binary unless the flag named it. ours says o runs that scenario.
func referenceOption(cmd *cobra.Command, o *bench.Options, scenario, flag string, path *string, find func(string) (string, error)) (ours bool, err error) {
	if o.Scenario != scenario {
		if cmd.Flags().Changed(flag) {
			return false, fmt.Errorf("--%s is only for --scenario %s, not %s", flag, scenario, o.Scenario)
		}
		return false, nil
	}
	if o.Compare && *path == "" {
		if *path, err = find(o.Executable); err != nil {
			return true, err
		}
	}
	return true, nil
}

// newBenchSideCommand is the child `volplane bench` runs per side: the
// embedded control plane registers process-wide state, so each side gets a
// process (and a control plane) of its own.
func newBenchSideCommand() *cobra.Command {
	var side, options string
	cmd := &cobra.Command{
		Use:    "side",
		Short:  "Measure one side of a volplane bench run (run by volplane bench)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var o bench.Options
			if err := json.Unmarshal([]byte(options), &o); err != nil {
				return fmt.Errorf("--options: %w", err)
			}
			o.Progress = cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return bench.RunSide(ctx, o, side, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&side, "side", bench.Volplane, "volplane or reference")
	cmd.Flags().StringVar(&options, "options", "{}", "the bench options, as JSON")
	return cmd
}
