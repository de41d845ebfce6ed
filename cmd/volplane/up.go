package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
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
	var cfg cluster.Config
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run an embedded control plane with volplane on it",
		Long: `Start, in this process and on 127.0.0.1 only, etcd, the real kube-apiserver,
kube-scheduler and kube-controller-manager (without the volume controllers that
volplane replaces) and N simulated Ready nodes. An admin kubeconfig is written to
DIR/kubeconfig. State survives restarts on the same data dir. Ctrl-C stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runUp(ctx, cmd, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", defaultDataDir(), "directory for etcd data, certificates, kubeconfig and logs (env "+dataDirEnv+")")
	f.IntVar(&cfg.Nodes, "nodes", 1, "number of simulated nodes (node-1..node-N)")
	f.IntVar(&cfg.APIServerPort, "apiserver-port", 0, "kube-apiserver port on 127.0.0.1 (0: a free port)")
	f.IntVar(&cfg.EtcdClientPort, "etcd-client-port", 0, "etcd client port on 127.0.0.1 (0: a free port)")
	f.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", 0, "etcd peer port on 127.0.0.1 (0: a free port)")
	return cmd
}

func runUp(ctx context.Context, cmd *cobra.Command, cfg cluster.Config) error {
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
	fmt.Fprintf(out, "volplane is up in %.1fs: API server %s, %d simulated node(s).\n",
		time.Since(began).Seconds(), cp.RESTConfig.Host, len(cp.Nodes))
	fmt.Fprintf(out, "Use it with:\n  volplane kubectl --kubeconfig %s get nodes\n  export KUBECONFIG=%s\n", cp.Kubeconfig, cp.Kubeconfig)
	fmt.Fprintf(out, "Logs: %s\nPress Ctrl-C to stop.\n", filepath.Join(dir, "logs"))
	loops := make(chan error, 1)
	go func() { loops <- manager.Run(ctx, upLoops(cp.RESTConfig)) }()
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "Shutting down ...")
		<-loops
		return nil
	case err := <-cp.Failed():
		return fmt.Errorf("control plane failed: %w", err)
	case err := <-loops:
		return fmt.Errorf("volplane controllers stopped: %w", err)
	}
}

// upLoops runs every built loop against the embedded control plane. The API
// server is ours alone, so the client limits are generous.
func upLoops(admin *rest.Config) manager.Config {
	rc := rest.CopyConfig(admin)
	rc.QPS, rc.Burst = 200, 400
	rc.UserAgent = "volplane-controller"
	return manager.Config{REST: rc, Controllers: manager.Known(), Workers: 4, ResyncPeriod: 15 * time.Second}
}
