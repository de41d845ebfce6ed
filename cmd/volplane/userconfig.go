package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
)

// clusterFlags are the flags of the commands a person runs against a
// cluster (explain, doctor, release): where the cluster is and how to print.
type clusterFlags struct {
	kubeconfig string
	output     string
}

// addKubeconfig registers --kubeconfig.
func (f *clusterFlags) addKubeconfig(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "",
		"kubeconfig of the cluster (default: $KUBECONFIG, else the kubeconfig of `volplane up`, else in-cluster)")
}

// addOutput registers -o/--output, for the commands that print a report.
func (f *clusterFlags) addOutput(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "output format: table or json")
}

// checkOutput rejects an output format other than table or json.
func (f *clusterFlags) checkOutput() error {
	switch f.output {
	case "table", "json":
		return nil
	}
	return fmt.Errorf("--output %q: want table or json", f.output)
}

// userKubeconfig is the kubeconfig a person's command uses: --kubeconfig,
// else $KUBECONFIG, else DATA_DIR/kubeconfig of `volplane up` when it
// exists; "" means in-cluster.
func userKubeconfig(flag string) string {
	if flag != "" || os.Getenv("KUBECONFIG") != "" {
		return flag
	}
	up := filepath.Join(defaultDataDir(), "kubeconfig")
	if _, err := os.Stat(up); err == nil {
		return up
	}
	return ""
}

// client connects to the cluster the flags name.
func (f *clusterFlags) client() (kubernetes.Interface, error) {
	rc, err := loadRESTConfig(userKubeconfig(f.kubeconfig))
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "volplane-cli"
	return kubernetes.NewForConfig(rc)
}
