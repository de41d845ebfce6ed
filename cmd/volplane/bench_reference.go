package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/bench"
	"github.com/volplane/volplane/bench/reflog"
)

// newBenchReferenceCommand is `volplane bench reference-binder`: the
// reference binder (kube-controller-manager's persistentvolume-binder) in a
// process of its own, so that the bench engine that execs it can measure
// its CPU and memory apart from the API server's and its own.
func newBenchReferenceCommand() *cobra.Command {
	var (
		cfg       bench.ReferenceConfig
		verbosity int
	)
	cmd := &cobra.Command{
		Use:    "reference-binder",
		Short:  "Run kube-controller-manager's persistentvolume-binder for volplane bench",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Kubeconfig == "" {
				return errors.New("--kubeconfig is required")
			}
			if cfg.QPS > 0 && cfg.Burst < 1 {
				return errors.New("--kube-api-burst must be at least 1 with a --kube-api-qps limit")
			}
			if err := reflog.Configure(verbosity); err != nil {
				return err
			}
			defer klog.Flush()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg.Ready = func() { fmt.Fprintln(cmd.OutOrStdout(), bench.ReadyLine) }
			return bench.RunReferenceBinder(ctx, cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required)")
	fl.Float32Var(&cfg.QPS, "kube-api-qps", 20, "API requests per second allowed to the binder, client side; 0 or less: no client-side limit")
	fl.IntVar(&cfg.Burst, "kube-api-burst", 30, "API request burst allowed to the binder (ignored without a --kube-api-qps limit)")
	fl.IntVar(&verbosity, "v", 0, "klog verbosity; at 0 only errors reach stderr, above 0 every log line of that verbosity does")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}
