package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volplane/volplane/internal/cluster"
)

// controlPlaneOnlyConflicts are the flags of `up` that configure what
// --control-plane-only does not run: a simulated node, the bundled drivers or
// volplane's loops.
var controlPlaneOnlyConflicts = []string{"nodes", "hostpath-capacity", "network-max-volumes-per-node", "fake-mounts", "metrics-bind-address", "profiling", "inject-faults", "without-loops"}

// checkControlPlaneOnly refuses, before anything starts, a flag that could
// only mean the user expected a part --control-plane-only leaves out.
func checkControlPlaneOnly(cmd *cobra.Command) error {
	var set []string
	for _, name := range controlPlaneOnlyConflicts {
		if cmd.Flags().Changed(name) {
			set = append(set, "--"+name)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return fmt.Errorf("--control-plane-only runs no simulated node, bundled driver or volplane loop: drop %s", strings.Join(set, ", "))
}

// runControlPlaneOnly runs the embedded control plane alone until ctx ends
// or a component fails: its nodes are real kubelets that join with their own
// credentials, and volplane runs on them from deploy/.
func runControlPlaneOnly(ctx context.Context, cmd *cobra.Command, cfg cluster.Config) error {
	out := cmd.OutOrStdout()
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	cfg.DataDir, cfg.Nodes = dir, 0
	if _, err := cfg.Advertise(); err != nil {
		return err
	}
	fmt.Fprintf(out, "Starting the embedded control plane (only) in %s ...\n", dir)
	began := time.Now()
	cp, err := cluster.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer cp.Stop()
	fmt.Fprintf(out, "volplane is up in %.1fs, the control plane only: API server %s (advertised as %s), no node, no bundled driver, no volplane loop.\n",
		time.Since(began).Seconds(), cp.RESTConfig.Host, cfg.AdvertiseAddress)
	fmt.Fprintf(out, "Join nodes with client certificates signed by %s; install volplane with deploy/.\n",
		filepath.Join(dir, "pki", "ca.key"))
	fmt.Fprintf(out, "Use it with:\n  volplane kubectl --kubeconfig %s get nodes\n", cp.Kubeconfig)
	fmt.Fprintf(out, "Logs: %s\nPress Ctrl-C to stop.\n", filepath.Join(dir, "logs"))
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "Shutting down ...")
		return nil
	case err := <-cp.Failed():
		return fmt.Errorf("control plane failed: %w", err)
	}
}
