package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/doctor"
)

func newReleaseCommand() *cobra.Command {
	var f clusterFlags
	var to string
	cfg := checkup.ReleaseConfig{}
	cmd := &cobra.Command{
		Use:   "release pv NAME [--to NAMESPACE/CLAIM]",
		Short: "Give a Retained, Released volume to one named claim, or to any, once its old claim is gone",
		Long: `Release makes a Released volume with reclaim policy Retain bindable again, data
kept. With --to NAMESPACE/CLAIM it pre-binds the volume to that one claim: it
sets the volume's claimRef to the claim's namespace and name (and UID, when the
claim exists), as a pre-bound volume carries them, so that the binder binds
that claim and no other; then it waits up to --wait for the claim to be Bound.
Without --to it clears the claimRef, and any claim that fits, in any namespace,
may bind the volume and read the old tenant's data; then it waits up to --wait
for the binder to mark the volume Available. Save or wipe the data first.

It first confirms, live, that the old claim is really gone (no claim of that
namespace, name and UID; a claim of the same name with another UID is a new
claim) and that nothing may still reach the data: no VolumeAttachment of the
volume, no node reporting it in use (status.volumesInUse, CSI volumes), no
scheduled pod that may still hold the old claim. The write carries the
resourceVersion read, so a concurrent change is read and decided again.

It refuses, with the reason and exit code 1, when the volume does not exist,
is being deleted, has another reclaim policy, is not Released, has no claimRef,
when its claim still exists, while anything attaches, mounts or names it, or
when the claim of --to is being deleted or bound to another volume.`,
		Example: `  volplane release pv pv-data-0 --to team-a/data
  volplane release pv pv-data-0`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "pv" && args[0] != "persistentvolume" {
				return fmt.Errorf("release %q: only volumes are released: volplane release pv NAME", args[0])
			}
			cfg.Name = args[1]
			if to != "" {
				key, err := doctor.ParseClaimKey(to)
				if err != nil {
					return fmt.Errorf("--to: %w", err)
				}
				cfg.To = key
			}
			client, err := f.client()
			if err != nil {
				return err
			}
			return checkup.Release(cmd.Context(), client, cfg, cmd.OutOrStdout())
		},
	}
	f.addKubeconfig(cmd)
	cmd.Flags().StringVar(&to, "to", "", "pre-bind the volume to this claim (NAMESPACE/NAME) instead of releasing it to any claim that fits")
	cmd.Flags().DurationVar(&cfg.Wait, "wait", 30*time.Second, "how long to wait for the binder to bind the claim of --to, or to mark the volume Available")
	return cmd
}
