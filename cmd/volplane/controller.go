package main

import "github.com/spf13/cobra"

func newControllerCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "controller",
		Short: "Run the volume control loops against a cluster",
		RunE:  notImplemented("controller"),
	}
}
