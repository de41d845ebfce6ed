package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/hostpath"
)

func newDriverCommand() *cobra.Command {
	var (
		cfg      hostpath.Config
		capacity string
	)
	cmd := &cobra.Command{
		Use:   "driver",
		Short: "Run the bundled hostpath CSI driver",
		Long: `Serve the CSI identity, controller and node services of ` + hostpath.DriverName + `
on a unix socket. Volumes are directories (mount) or sparse files (block) under
the data dir of this node, and are accessible from this node only (topology key
` + hostpath.TopologyKey + `). State survives restarts on the same data dir.
The socket is owner-only (mode 0600) whatever the umask; a missing socket
directory is created owner-only (0700). Mounting needs root; block volumes
also need loop devices (losetup).
SIGINT or SIGTERM stops it gracefully.`,
		Example: `  volplane driver --endpoint unix:///var/lib/kubelet/plugins/` + hostpath.DriverName + `/csi.sock \
    --node-id "$NODE_NAME" --data-dir /var/lib/volplane/hostpath --capacity 500Gi`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := resource.ParseQuantity(capacity)
			if err != nil {
				return fmt.Errorf("--capacity %q: %w (use a quantity such as 100Gi)", capacity, err)
			}
			cfg.Capacity = q.Value()
			d, err := hostpath.New(cfg)
			if err != nil {
				return fmt.Errorf("driver: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return d.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Endpoint, "endpoint", "", "where to serve CSI: unix:///absolute/path/to/csi.sock (required)")
	f.StringVar(&cfg.NodeID, "node-id", "", "this node's ID, usually the Kubernetes node name (required)")
	f.StringVar(&cfg.DataDir, "data-dir", "", "directory for volumes, snapshots and the driver's state (required)")
	f.StringVar(&capacity, "capacity", "100Gi", "bytes that volumes and snapshots may claim in total, as a quantity")
	f.Int64Var(&cfg.MaxVolumesPerNode, "max-volumes-per-node", 0, "most volumes attached to this node at once (0: no limit)")
	f.BoolVar(&cfg.AttachRequired, "attach-required", false, "serve ControllerPublish/Unpublish; the node then stages only attached volumes")
	f.Var(&faultsFlag{&cfg.Faults}, "inject-faults", "for soak tests: fail, time out or delay controller calls at random, e.g. seed=1,unavailable=0.05,timeout=0.05,delay=0.05,max-delay=2s")
	_ = f.MarkHidden("inject-faults")
	for _, name := range []string{"endpoint", "node-id", "data-dir"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// faultsFlag is a hostpath fault spec (hostpath.ParseFaults).
type faultsFlag struct{ f *hostpath.Faults }

func (f *faultsFlag) String() string {
	if f.f == nil {
		return ""
	}
	return f.f.String()
}

func (f *faultsFlag) Set(s string) error {
	parsed, err := hostpath.ParseFaults(s)
	if err != nil {
		return err
	}
	*f.f = parsed
	return nil
}

func (f *faultsFlag) Type() string { return "faults" }
