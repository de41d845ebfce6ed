// Package crd holds the snapshot API's CustomResourceDefinitions
// (VolumeSnapshot, VolumeSnapshotContent, VolumeSnapshotClass and their
// group counterparts) as deploy/ applies them and `volplane up` installs
// them: copied unchanged from github.com/kubernetes-csi/external-snapshotter/client/v8
// at the version go.mod requires (config/crd/), which
// TestSnapshotCRDsAreTheClientModules checks.
package crd

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Files are the definitions and their kustomization.yaml.
//
//go:embed *.yaml
var Files embed.FS

// Snapshot decodes every definition of Files.
func Snapshot() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(Files, "*.storage.k8s.io_*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		data, err := Files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(bytes.TrimPrefix(data, []byte("---\n")), &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, &crd)
	}
	return out, nil
}
