// Package deploy holds the manifests that run volplane in a real cluster
// (`kubectl apply -k deploy/`), embedded so that tests check the very files
// an operator applies.
package deploy

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/volplane/volplane/deploy/crd"
)

//go:embed *.yaml
var manifests embed.FS

// Objects builds the kustomization as `kubectl apply -k deploy/` does
// (kustomize's own build: its resource list, namespace and images count)
// and decodes every object it yields, in kustomize's order.
func Objects() ([]runtime.Object, error) {
	const dir = "/deploy"
	disk := filesys.MakeFsInMemory()
	for sub, files := range map[string]fs.FS{".": manifests, "crd": crd.Files} {
		names, err := fs.Glob(files, "*.yaml")
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			data, err := fs.ReadFile(files, name)
			if err != nil {
				return nil, err
			}
			if err := disk.WriteFile(path.Join(dir, sub, name), data); err != nil {
				return nil, err
			}
		}
	}
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(disk, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build deploy/: %w", err)
	}
	return decodeBuilt(built)
}

// decodeBuilt decodes every object of a kustomize build, in its order.
func decodeBuilt(built resmap.ResMap) ([]runtime.Object, error) {
	decode := serializer.NewCodecFactory(decoding).UniversalDeserializer()
	var out []runtime.Object
	for _, res := range built.Resources() {
		doc, err := res.AsYAML()
		if err != nil {
			return nil, err
		}
		json, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res.CurId(), err)
		}
		obj, _, err := decode.Decode(bytes.TrimSpace(json), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res.CurId(), err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// decoding knows client-go's types, CustomResourceDefinitions and the
// snapshot API's kinds.
var decoding = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(Register(s))
	return s
}()

// Register adds every type deploy/ holds to s: client-go's,
// CustomResourceDefinitions and the snapshot API's.
func Register(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{scheme.AddToScheme, apiextensionsv1.AddToScheme, snapv1.AddToScheme, groupv1.AddToScheme} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}

// Of returns the objects of type T (say *appsv1.Deployment), in order.
func Of[T runtime.Object](objs []runtime.Object) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	return out
}
