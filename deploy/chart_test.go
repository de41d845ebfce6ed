package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The checked-in chart is what the generator makes of deploy/ now.
func TestChartIsGenerated(t *testing.T) {
	want, err := Chart()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string][]byte{}
	err = filepath.WalkDir(ChartDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		have[filepath.ToSlash(strings.TrimPrefix(p, ChartDir+string(filepath.Separator)))] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedKeys(want) {
		if !bytes.Equal(have[name], want[name]) {
			t.Errorf("deploy/chart/%s is stale: run `go generate ./deploy/`", name)
		}
	}
	for _, name := range sortedKeys(have) {
		if _, ok := want[name]; !ok {
			t.Errorf("deploy/chart/%s is not generated: run `go generate ./deploy/`", name)
		}
	}
}

// With its default values the chart installs what `kubectl apply -k
// deploy/` applies: the same objects with the same fields.
func TestChartRendersWhatKustomizeBuilds(t *testing.T) {
	want := kustomizeBuild(t)
	have := renderChart(t, "")
	for _, id := range sortedKeys(want) {
		h, ok := have[id]
		if !ok {
			t.Errorf("the chart lacks %s", id)
			continue
		}
		if !reflect.DeepEqual(h, want[id]) {
			a, _ := yaml.Marshal(want[id])
			b, _ := yaml.Marshal(h)
			t.Errorf("%s differs:\nkustomize:\n%s\nhelm:\n%s", id, a, b)
		}
	}
	for _, id := range sortedKeys(have) {
		if _, ok := want[id]; !ok {
			t.Errorf("the chart has %s, which kustomize does not build", id)
		}
	}
	if len(want) < 40 {
		t.Errorf("kustomize built only %d objects", len(want))
	}
}

func TestChartValuesLand(t *testing.T) {
	objs := renderChart(t, ChartSetExample)
	var namespaced, deployments, daemonsets int
	for id, o := range objs {
		kind, ns := str(o, "kind"), str(o, "metadata", "namespace")
		if kind == "ValidatingAdmissionPolicy" || kind == "ValidatingAdmissionPolicyBinding" {
			t.Errorf("%s rendered with admissionPolicy.enabled=false", id)
		}
		if strings.Contains(str(o, "metadata", "name"), "volplane-snapshots-") { // rbac-tenants.yaml
			t.Errorf("%s rendered with tenantRoles.enabled=false", id)
		}
		if kind == "Namespace" && str(o, "metadata", "name") == "volplane" {
			t.Errorf("namespace volplane rendered with namespace=storage")
		}
		if ns == "volplane" {
			t.Errorf("%s in namespace volplane, want storage", id)
		}
		if ns == "storage" {
			namespaced++
		}
		walkStrings(o, func(s string) {
			if strings.Contains(s, "serviceaccount:volplane:") || strings.HasSuffix(s, "-namespace=volplane") {
				t.Errorf("%s still names namespace volplane: %s", id, s)
			}
			if strings.HasPrefix(s, "/var/lib/kubelet") || strings.Contains(s, "=/var/lib/kubelet") {
				t.Errorf("%s still names /var/lib/kubelet: %s", id, s)
			}
		})
		spec, _ := o["spec"].(map[string]any)
		tpl, _ := nested(spec, "template", "spec").(map[string]any)
		switch kind {
		case "Deployment":
			deployments++
			if spec["replicas"] != float64(3) {
				t.Errorf("%s: replicas %v, want 3", id, spec["replicas"])
			}
		case "DaemonSet":
			daemonsets++
			if !reflect.DeepEqual(tpl["nodeSelector"], map[string]any{"disk": "ssd"}) {
				t.Errorf("%s: nodeSelector %v, want disk=ssd", id, tpl["nodeSelector"])
			}
			checkKubeletDir(t, id, tpl)
		}
		for _, c := range containers(tpl) {
			if img := str(c, "image"); strings.Contains(img, "volplane") && img != "registry.example/volplane:v9.9.9" {
				t.Errorf("%s: container %s runs %s", id, str(c, "name"), img)
			}
		}
	}
	if deployments != 1 || daemonsets != 1 || namespaced != len(inNamespace(renderChart(t, ""), "volplane")) {
		t.Errorf("%d Deployments, %d DaemonSets, %d objects in storage", deployments, daemonsets, namespaced)
	}
	for _, id := range []string{"Namespace//storage", "ServiceAccount/storage/volplane-node", "ClusterRoleBinding//volplane-controller"} {
		if _, ok := objs[id]; !ok {
			t.Errorf("no %s", id)
		}
	}
}

// Helm refuses a misspelt value or one of the wrong type (values.schema.json)
// rather than rendering the defaults.
func TestChartRefusesWrongValues(t *testing.T) {
	chrt, err := loader.LoadDir(ChartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{"controler.replicas=3", "controller.replicas=two", "namespace=Not_A_Namespace",
		"kubeletDir=var/lib/kubelet", "admissionPolicy.enabled=maybe", "image.tag="} {
		overrides, err := strvals.Parse(set)
		if err != nil {
			t.Fatal(err)
		}
		_, err = chartutil.ToRenderValues(chrt, overrides, common.ReleaseOptions{Name: "volplane", Namespace: "default", IsInstall: true},
			common.DefaultCapabilities)
		if err == nil {
			t.Errorf("--set %s was accepted", set)
		}
	}
}

func checkKubeletDir(t *testing.T, id string, pod map[string]any) {
	t.Helper()
	var paths []string
	for _, v := range list(pod["volumes"]) {
		if p := str(v, "hostPath", "path"); strings.Contains(p, "kubelet") {
			paths = append(paths, p)
		}
	}
	for _, c := range containers(pod) {
		for _, m := range list(c["volumeMounts"]) {
			if p := str(m, "mountPath"); strings.Contains(p, "kubelet") {
				paths = append(paths, p)
			}
		}
		args, _ := c["args"].([]any)
		for _, a := range args {
			if s, _ := a.(string); strings.Contains(s, "kubelet") {
				paths = append(paths, s[strings.Index(s, "=")+1:])
			}
		}
	}
	if len(paths) < 7 {
		t.Errorf("%s: only %d paths under the kubelet's dir: %v", id, len(paths), paths)
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/var/lib/k0s/kubelet/") {
			t.Errorf("%s: %s is not under kubeletDir", id, p)
		}
	}
}

// renderChart renders deploy/chart with Helm's engine, as `helm install
// volplane deploy/chart --set set` would, its crds/ included, and returns
// the objects by id.
func renderChart(t *testing.T, set string) map[string]map[string]any {
	t.Helper()
	chrt, err := loader.LoadDir(ChartDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := RenderChart(chrt, set)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]map[string]any{}
	for _, crd := range chrt.CRDObjects() {
		addDocs(t, objs, crd.Filename, crd.File.Data)
	}
	for _, name := range sortedKeys(files) {
		if strings.HasSuffix(name, ".yaml") {
			addDocs(t, objs, name, []byte(files[name]))
		}
	}
	return objs
}

// kustomizeBuild is `kustomize build deploy/`, by id.
func kustomizeBuild(t *testing.T) map[string]map[string]any {
	t.Helper()
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), ".")
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]map[string]any{}
	for _, res := range built.Resources() {
		doc, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		addDocs(t, objs, res.CurId().String(), doc)
	}
	// kustomize writes a folded scalar back with one more line break
	// before each more-indented line (go-yaml v3), so `kubectl apply -k`
	// sends the admission policies' CEL with blank lines that Helm, which
	// sends the file as written, does not: the same expressions.
	for _, o := range objs {
		if str(o, "kind") == "ValidatingAdmissionPolicy" {
			unfoldExpressions(o)
		}
	}
	return objs
}

func unfoldExpressions(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && strings.HasSuffix(k, "xpression") {
				v[k] = strings.ReplaceAll(s, "\n\n", "\n")
				continue
			}
			unfoldExpressions(e)
		}
	case []any:
		for _, e := range v {
			unfoldExpressions(e)
		}
	}
}

func inNamespace(objs map[string]map[string]any, ns string) []string {
	var out []string
	for id, o := range objs {
		if str(o, "metadata", "namespace") == ns {
			out = append(out, id)
		}
	}
	return out
}

func addDocs(t *testing.T, objs map[string]map[string]any, from string, data []byte) {
	t.Helper()
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", from, err)
		}
		var o map[string]any
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%s: %v", from, err)
		}
		if len(o) == 0 {
			continue
		}
		id := fmt.Sprintf("%s/%s/%s", str(o, "kind"), str(o, "metadata", "namespace"), str(o, "metadata", "name"))
		if _, dup := objs[id]; dup {
			t.Fatalf("%s: %s twice", from, id)
		}
		objs[id] = o
	}
}

func nested(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func str(v any, path ...string) string {
	s, _ := nested(v, path...).(string)
	return s
}

func list(v any) []map[string]any {
	var out []map[string]any
	l, _ := v.([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func containers(pod map[string]any) []map[string]any {
	return slices.Concat(list(pod["initContainers"]), list(pod["containers"]))
}

func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case map[string]any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
