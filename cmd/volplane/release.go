package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/volplane/volplane/internal/checkup"
)

func newReleaseCommand() *cobra.Command {
	var f clusterFlags
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "release pv NAME",
		Short: "Make a Retained, Released volume Available again by clearing its stale claimRef",
		Long: `Release makes a Released volume with reclaim policy Retain Available again, data
kept: it clears the volume's claimRef once it has confirmed that the claim it
names is really gone (no claim of that namespace, name and UID; a claim of the
same name with another UID is a new claim, and the release goes ahead). The
write carries the resourceVersion read, so a concurrent change is re-read and
decided again. It then waits up to --wait for the binder to mark the volume
Available.

It refuses, with the reason and exit code 1, when the volume does not exist,
is being deleted, has another reclaim policy, is not Released, has no claimRef,
or when its claim still exists.`,
		Example: `  volplane release pv pv-data-0`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "pv" && args[0] != "persistentvolume" {
				return fmt.Errorf("release %q: only volumes are released: volplane release pv NAME", args[0])
			}
			client, err := f.client()
			if err != nil {
				return err
			}
			return checkup.Release(cmd.Context(), client, args[1], wait, cmd.OutOrStdout())
		},
	}
	f.add(cmd, false)
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the binder to mark the volume Available")
	return cmd
}
