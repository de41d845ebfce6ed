package rbac

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// kinds knows every type deploy/ holds: client-go's and the snapshot API's
// CustomResourceDefinitions.
var kinds = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}()

// apply creates deploy/'s objects in kustomize's order (namespace and
// roles first). The workloads are only validated by the API server (a
// dry run): no kubelet runs here to start their pods; each role's loops
// run in this process instead.
func apply(ctx context.Context, rc *rest.Config, objs []runtime.Object) error {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	for _, obj := range objs {
		opts := metav1.CreateOptions{}
		switch obj.(type) {
		case *appsv1.Deployment, *appsv1.DaemonSet:
			opts.DryRun = []string{metav1.DryRunAll}
		}
		gvks, _, err := kinds.ObjectKinds(obj)
		if err != nil {
			return err
		}
		mapping, err := mapper.RESTMapping(gvks[0].GroupKind(), gvks[0].Version)
		if err != nil {
			return err
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: content}
		u.SetGroupVersionKind(gvks[0])
		var client dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			client = dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		if _, err := client.Create(ctx, u, opts); err != nil {
			return fmt.Errorf("create %s %s: %w", gvks[0].Kind, u.GetName(), err)
		}
	}
	return nil
}
