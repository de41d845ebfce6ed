package main

import "github.com/spf13/cobra"

func newDriverCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "driver",
		Short: "Run the bundled hostpath CSI driver",
		RunE:  notImplemented("driver"),
	}
}
