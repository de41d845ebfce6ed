// Package depsholder keeps modules that other packages are about to import in go.mod. Temporary.
package depsholder

import (
	_ "github.com/container-storage-interface/spec/lib/go/csi"
	_ "github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "google.golang.org/grpc"
	_ "k8s.io/component-helpers/storage/volume"
	_ "k8s.io/mount-utils"
)
