package rbac

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/volplane/volplane/deploy"
)

// kinds knows every type deploy/ holds: client-go's, the snapshot API's
// CustomResourceDefinitions and its classes.
var kinds = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(deploy.Register(s))
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
		mapping, err := mappingOf(ctx, mapper, gvks[0])
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

// mappingOf maps a kind to its resource, waiting (a minute at most) for a
// kind whose definition deploy/ has just created to be served.
func mappingOf(ctx context.Context, mapper *restmapper.DeferredDiscoveryRESTMapper, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	var mapping *meta.RESTMapping
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var err error
		if mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); meta.IsNoMatchError(err) {
			mapper.Reset()
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", gvk, err)
	}
	return mapping, nil
}
