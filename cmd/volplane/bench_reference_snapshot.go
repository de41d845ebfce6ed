package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/bench"
	"github.com/volplane/volplane/bench/reflog"
	"github.com/volplane/volplane/bench/refproc"
)

// newBenchReferenceSnapshotCommands are `volplane bench
// reference-snapshot-controller` and `volplane bench
// reference-csi-snapshotter`: external-snapshotter v8.6.0's two controllers,
// each in a process of its own as they are deployed, for the bench's
// snapshot scenario to exec and measure.
func newBenchReferenceSnapshotCommands() []*cobra.Command {
	controller := referenceSnapshotCommand("reference-snapshot-controller",
		"Run external-snapshotter's snapshot-controller for volplane bench", false,
		bench.ReadySnapshotController, bench.RunReferenceSnapshotController)
	sidecar := referenceSnapshotCommand("reference-csi-snapshotter",
		"Run external-snapshotter's csi-snapshotter sidecar for volplane bench", true,
		bench.ReadyCSISnapshotter, bench.RunReferenceCSISnapshotter)
	return []*cobra.Command{controller, sidecar}
}

func referenceSnapshotCommand(use, short string, needsCSI bool, readyLine string,
	run func(context.Context, bench.ReferenceSnapshotConfig) error) *cobra.Command {
	var (
		cfg       bench.ReferenceSnapshotConfig
		verbosity int
	)
	cmd := &cobra.Command{
		Use:    use,
		Short:  short,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refproc.Check(cfg, needsCSI); err != nil {
				return err
			}
			if err := reflog.Configure(verbosity); err != nil {
				return err
			}
			defer klog.Flush()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			cfg.Ready = func() { fmt.Fprintln(out, readyLine) }
			return run(ctx, cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required)")
	fl.Float32Var(&cfg.QPS, "kube-api-qps", bench.SnapshotterQPS, "API requests per second, client side; 0 or less: no client-side limit")
	fl.IntVar(&cfg.Burst, "kube-api-burst", bench.SnapshotterBurst, "API request burst (ignored without a --kube-api-qps limit)")
	if needsCSI {
		fl.StringVar(&cfg.CSIEndpoint, "csi-address", "", "the CSI driver's endpoint, unix:///path (required)")
	}
	fl.IntVar(&verbosity, "v", 0, "klog verbosity; at 0 only errors reach stderr")
	return cmd
}
