package main

import "github.com/spf13/cobra"

func newExplainCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "explain (pvc NAMESPACE/NAME | pv NAME)",
		Short: "Explain why a claim or volume is (not) bound",
		RunE:  notImplemented("explain"),
	}
}
