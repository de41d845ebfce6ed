package main

import (
	"github.com/spf13/cobra"

	"github.com/volplane/volplane/internal/inspect"
)

func newExplainCommand() *cobra.Command {
	var f clusterFlags
	var namespace string
	cmd := &cobra.Command{
		Use:   "explain (pvc NAMESPACE/NAME | pv NAME)",
		Short: "Explain why a claim or volume is (not) bound, and what happens next",
		Long: `Explain says what a PersistentVolumeClaim or PersistentVolume is waiting for, in
one sentence, and why: every volume considered for a claim with the binder's own
verdict, counted by reason; the class, its binding mode and whether anything
serves its provisioner; the pods a WaitForFirstConsumer claim waits for;
provisioning failures; once bound, the attach and mount state per node, a
pending expansion or modification; and what holds a deletion. For a volume:
why it is Available, Released or Failed and what its reclaim policy does next.`,
		Example: `  volplane explain pvc default/data
  volplane explain pvc data -n default -o json
  volplane explain pv pvc-0b9c...`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.checkOutput(); err != nil {
				return err
			}
			client, err := f.client()
			if err != nil {
				return err
			}
			return inspect.Explain(cmd.Context(), client, args[0], args[1], namespace, f.output, cmd.OutOrStdout())
		},
	}
	f.addKubeconfig(cmd)
	f.addOutput(cmd)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of a claim given without one")
	return cmd
}
