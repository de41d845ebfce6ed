// Package chart installs deploy/chart as `helm install` does, with README's
// non-default values (deploy.ChartSetExample), into the embedded, real
// kube-apiserver: Helm's engine renders it, its crds/ are created first and
// the rest in Helm's install order, and the API server must accept every
// object; the admission policies, which those values leave out, come from
// a second render with them on (their CEL names the namespace set).
// The chart with its default values renders deploy/'s objects exactly
// (deploy/chart_test.go), which test/e2e/rbac applies.
package chart

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/volplane/volplane/deploy"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

func TestMain(m *testing.M) {
	support.Main(m, 1)
}

func TestChartInstallsWithREADMEValues(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := stacktest.ControlPlane(t)
	chrt, err := loader.LoadDir("../../../deploy/" + deploy.ChartDir)
	if err != nil {
		t.Fatal(err)
	}
	manifests := render(t, chrt, deploy.ChartSetExample)
	dyn, err := dynamic.NewForConfig(cp.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cp.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	in := installer{dyn: dyn, mapper: mapper}
	all := func(string) bool { return true }
	for _, crd := range chrt.CRDObjects() {
		in.create(ctx, t, crd.Filename, string(crd.File.Data), all)
	}
	for _, m := range manifests {
		in.create(ctx, t, m.Name, m.Content, all)
	}
	for kind, n := range map[string]int{"CustomResourceDefinition": 6, "Namespace": 3, "Deployment": 1, "DaemonSet": 1,
		"StorageClass": 2, "CSIDriver": 1, "ValidatingAdmissionPolicy": 0} {
		if in.kinds[kind] != n {
			t.Errorf("%d %s installed, want %d", in.kinds[kind], kind, n)
		}
	}
	// What the values said is what the API server holds.
	deployments := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("storage")
	d, err := deployments.Get(ctx, "volplane-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); replicas != 3 {
		t.Errorf("volplane-controller has %d replicas, want 3", replicas)
	}
	// The admission policies, left out above, compile with the namespace
	// set too.
	policies := func(kind string) bool { return strings.HasPrefix(kind, "ValidatingAdmissionPolicy") }
	for _, m := range render(t, chrt, deploy.ChartSetExample+",admissionPolicy.enabled=true") {
		in.create(ctx, t, m.Name, m.Content, policies)
	}
	t.Logf("installed %v", in.kinds)
	if in.kinds["ValidatingAdmissionPolicy"] != 2 || in.kinds["ValidatingAdmissionPolicyBinding"] != 2 {
		t.Errorf("admission policies installed: %v", in.kinds)
	}
}

// render renders the chart as `helm install volplane --set set` would, in
// Helm's install order.
func render(t *testing.T, chrt *chartv2.Chart, set string) []releaseutil.Manifest {
	t.Helper()
	files, err := deploy.RenderChart(chrt, set)
	if err != nil {
		t.Fatal(err)
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		t.Fatal(err)
	}
	return manifests
}

// installer creates rendered manifests, as helm install does.
type installer struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	kinds  map[string]int
}

func (in *installer) create(ctx context.Context, t *testing.T, from, content string, only func(kind string) bool) {
	t.Helper()
	if in.kinds == nil {
		in.kinds = map[string]int{}
	}
	for _, doc := range releaseutil.SplitManifests(content) {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%s: %v", from, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		gvk := u.GroupVersionKind()
		if !only(gvk.Kind) {
			continue
		}
		var mapping *meta.RESTMapping
		// A kind whose definition was just created is served within moments.
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
			var err error
			if mapping, err = in.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				in.mapper.Reset()
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: no resource serves %s: %v", from, gvk, err)
		}
		var client dynamic.ResourceInterface = in.dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			client = in.dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		if _, err := client.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: create %s: %v", from, describe(u), err)
		}
		in.kinds[gvk.Kind]++
	}
}

func describe(u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
}
