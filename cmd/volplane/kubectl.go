package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

func newKubectlCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "kubectl [kubectl arguments]",
		Short: "Run the built-in kubectl (defaults to the kubeconfig of `volplane up`)",
		Long: `The real kubectl, built in. Without --kubeconfig and with KUBECONFIG unset it
uses DATA_DIR/kubeconfig of 'volplane up' (DATA_DIR: $` + dataDirEnv + ` or ~/.volplane).`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !hasKubeconfigFlag(args) && os.Getenv("KUBECONFIG") == "" {
				os.Setenv("KUBECONFIG", filepath.Join(defaultDataDir(), "kubeconfig"))
			}
			streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
			kubectl := kubectlcmd.NewDefaultKubectlCommandWithArgs(kubectlcmd.KubectlOptions{
				Arguments: append([]string{"kubectl"}, args...),
				ConfigFlags: genericclioptions.NewConfigFlags(true).
					WithDeprecatedPasswordFlag().WithWarningPrinter(streams),
				IOStreams: streams,
			})
			kubectl.SetArgs(args)
			// kubectl reports its own errors and chooses its exit code, as the
			// standalone binary does.
			if err := kubectl.ExecuteContext(cmd.Context()); err != nil {
				cmdutil.CheckErr(err)
			}
			return nil
		},
	}
}

func hasKubeconfigFlag(args []string) bool {
	for _, a := range args {
		if a == "--kubeconfig" || strings.HasPrefix(a, "--kubeconfig=") {
			return true
		}
	}
	return false
}
