//go:build ignore

// gen_chart writes deploy/chart from deploy/'s kustomize files: run it with
// `go generate ./deploy/` after changing any of them.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/volplane/volplane/deploy"
)

func main() {
	files, err := deploy.Chart()
	if err != nil {
		fmt.Fprintln(os.Stderr, "generate chart:", err)
		os.Exit(1)
	}
	if err := os.RemoveAll(deploy.ChartDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, data := range files {
		p := filepath.Join(deploy.ChartDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
