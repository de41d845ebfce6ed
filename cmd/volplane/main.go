// Command volplane is the Kubernetes persistent-volume control plane: the binder,
// CSI provisioning/attach/expansion, the protection controllers, a bundled CSI
// driver and an embedded control plane, in one binary.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(exitCode(err))
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "volplane",
		Short:         "The Kubernetes persistent-volume control plane",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newUpCommand(),
		newControllerCommand(),
		newDriverCommand(),
		newExplainCommand(),
		newDoctorCommand(),
		newReleaseCommand(),
		newBenchCommand(),
		newConformanceCommand(),
		newKubectlCommand(),
	)
	return root
}
