package deploy

//go:generate go run gen_chart.go

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/volplane/volplane/deploy/crd"
)

// The Helm chart in deploy/chart is generated from the kustomize files of
// deploy/ (`go generate ./deploy/`), never edited by hand: the kustomize
// files are the one source. They are what the other tests of this package,
// test/e2e/rbac and the real-node test check, they stay plain YAML an
// operator can read and apply with kubectl alone, and their comments carry
// the reasons; a template language is a superset that plain YAML cannot be
// generated back from without rendering. Each file becomes one template,
// with its comments, in which only the values an operator sets are
// templated (see values.yaml). With the default values the chart renders
// the very objects `kustomize build deploy/` yields (chart_test.go).

// ChartDir is the chart's directory, relative to deploy/.
const ChartDir = "chart"

// ChartSetExample is README's `helm install --set` example of non-default
// values: TestChartValuesLand checks that each lands, test/e2e/chart
// installs the chart with them.
const ChartSetExample = "namespace=storage,image.repository=registry.example/volplane,image.tag=v9.9.9," +
	"controller.replicas=3,kubeletDir=/var/lib/k0s/kubelet,node.nodeSelector.disk=ssd,admissionPolicy.enabled=false,tenantRoles.enabled=false"

// The namespaces of deploy/, each with the value that names it in the chart.
var chartNamespaces = []struct{ name, value string }{
	{"volplane", "namespace"},
	{"volplane-nodes", "nodeNamespace"},
	{"volplane-csi-sidecar", "csiSidecarNamespace"},
}

// optionalFiles are the parts an operator may leave out, by the value that
// turns each on (all on by default, as in deploy/).
var optionalFiles = map[string]string{
	"admission-node.yaml":   "admissionPolicy",
	"rbac-tenants.yaml":     "tenantRoles",
	"rbac-csi-sidecar.yaml": "csiSidecarRoles",
}

// kubeletDir is the kubelet's root directory the manifests assume.
const kubeletDir = "/var/lib/kubelet"

// workloads are the pod templates whose scheduling the chart opens up, by
// kind, with the value that holds their settings.
var workloads = map[string]string{"Deployment": "controller", "DaemonSet": "node"}

// kustomization is what the chart needs of deploy/kustomization.yaml.
type kustomization struct {
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// chartDefaults are the values.yaml defaults, read off deploy/.
type chartDefaults struct {
	imageName, repository, tag string
	registrar                  string
	replicas                   string
	scheduling                 map[string]map[string]any // workload value → nodeSelector/tolerations
}

// Chart generates the chart's files (path under ChartDir → content) from
// deploy/'s kustomization, its files and crd/.
func Chart() (map[string][]byte, error) {
	var k kustomization
	raw, err := fs.ReadFile(manifests, "kustomization.yaml")
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		return nil, fmt.Errorf("kustomization.yaml: %w", err)
	}
	if len(k.Images) != 1 {
		return nil, fmt.Errorf("kustomization.yaml: want one image to template, got %d", len(k.Images))
	}
	d := &chartDefaults{imageName: k.Images[0].Name, repository: k.Images[0].NewName, tag: k.Images[0].NewTag,
		scheduling: map[string]map[string]any{}}
	out := map[string][]byte{}
	for _, res := range k.Resources {
		if res == "crd" {
			if err := chartCRDs(out); err != nil {
				return nil, err
			}
			continue
		}
		src, err := fs.ReadFile(manifests, res)
		if err != nil {
			return nil, err
		}
		tpl, err := d.template(res, string(src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res, err)
		}
		out[path.Join("templates", res)] = []byte(tpl)
	}
	if d.replicas == "" || d.registrar == "" {
		return nil, fmt.Errorf("deploy/ has no controller replicas or registrar image to template")
	}
	out["Chart.yaml"] = []byte(chartYAML(d))
	values, err := valuesYAML(d)
	if err != nil {
		return nil, err
	}
	out["values.yaml"] = values
	out["values.schema.json"] = []byte(valuesSchema)
	return out, nil
}

// chartCRDs copies crd/ into the chart's crds/, which Helm installs before
// the templates (the snapshot classes need them) and never deletes or
// upgrades: `helm install --skip-crds` leaves them out.
func chartCRDs(out map[string][]byte) error {
	var k kustomization
	raw, err := fs.ReadFile(crd.Files, "kustomization.yaml")
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		return fmt.Errorf("crd/kustomization.yaml: %w", err)
	}
	for _, res := range k.Resources {
		data, err := fs.ReadFile(crd.Files, res)
		if err != nil {
			return err
		}
		out[path.Join("crds", res)] = data
	}
	return nil
}

var (
	kindLine       = regexp.MustCompile(`^kind: *(\S+)`)
	namespaceLine  = regexp.MustCompile(`^(\s*namespace: *)(\S+)\s*$`)
	topNameLine    = regexp.MustCompile(`^(  name: *)(\S+)\s*$`)
	imageLine      = regexp.MustCompile(`^(\s*image: *)(\S+)\s*$`)
	replicasLine   = regexp.MustCompile(`^(  replicas: *)(\d+)\s*$`)
	podSpecKeyLine = regexp.MustCompile(`^      (nodeSelector|tolerations):`)
	saNameLine     = regexp.MustCompile(`^      serviceAccountName: `)
)

// template turns one kustomize file into a template.
func (d *chartDefaults) template(file, src string) (string, error) {
	if strings.Contains(src, "{{") {
		return "", fmt.Errorf("holds {{, which Helm would read as a template")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by `go generate ./deploy/` from deploy/%s: edit that file, not this one.\n", file)
	if v, ok := optionalFiles[file]; ok {
		fmt.Fprintf(&b, "{{- if .Values.%s.enabled }}\n", v)
	}
	docs := strings.Split(src, "\n---\n")
	for i, doc := range docs {
		body, err := d.document(doc)
		if err != nil {
			return "", err
		}
		docs[i] = body
	}
	b.WriteString(strings.Join(docs, "\n---\n"))
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	if _, ok := optionalFiles[file]; ok {
		b.WriteString("{{- end }}\n")
	}
	return b.String(), nil
}

// document templates one YAML document of a file.
func (d *chartDefaults) document(doc string) (string, error) {
	lines := strings.Split(doc, "\n")
	kind := ""
	for _, l := range lines {
		if m := kindLine.FindStringSubmatch(l); m != nil {
			kind = m[1]
		}
	}
	workload := workloads[kind]
	placed := false
	var out []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
			continue
		}
		if workload != "" && podSpecKeyLine.MatchString(l) {
			end, err := d.takeScheduling(workload, lines, i)
			if err != nil {
				return "", err
			}
			i = end - 1
			continue
		}
		t, err := d.line(kind, l)
		if err != nil {
			return "", err
		}
		out = append(out, t)
		if workload != "" && saNameLine.MatchString(l) {
			out = append(out, schedulingBlock(workload, "nodeSelector"), schedulingBlock(workload, "tolerations"))
			placed = true
		}
	}
	if workload != "" && !placed {
		return "", fmt.Errorf("the pod spec of the %s has no serviceAccountName to place its nodeSelector and tolerations after", kind)
	}
	return strings.Join(out, "\n"), nil
}

// takeScheduling reads the pod spec's nodeSelector or tolerations starting
// at line i as the default of its value and returns the line after it.
func (d *chartDefaults) takeScheduling(workload string, lines []string, i int) (int, error) {
	end := i + 1
	for end < len(lines) && (strings.HasPrefix(lines[end], "        ") || strings.TrimSpace(lines[end]) == "") {
		end++
	}
	var v map[string]any
	if err := yaml.Unmarshal([]byte(strings.Join(lines[i:end], "\n")), &v); err != nil {
		return 0, fmt.Errorf("%s scheduling: %w", workload, err)
	}
	if d.scheduling[workload] == nil {
		d.scheduling[workload] = map[string]any{}
	}
	for key, val := range v {
		d.scheduling[workload][key] = val
	}
	return end, nil
}

func schedulingBlock(workload, key string) string {
	return fmt.Sprintf("      {{- with .Values.%s.%s }}\n      %s:\n        {{- toYaml . | nindent 8 }}\n      {{- end }}", workload, key, key)
}

// line templates one line of a document of kind.
func (d *chartDefaults) line(kind, l string) (string, error) {
	if m := namespaceLine.FindStringSubmatch(l); m != nil {
		if v := namespaceValue(m[2]); v != "" {
			return m[1] + "{{ .Values." + v + " }}", nil
		}
	}
	if m := topNameLine.FindStringSubmatch(l); m != nil && kind == "Namespace" {
		v := namespaceValue(m[2])
		if v == "" {
			return "", fmt.Errorf("namespace %s has no value in the chart", m[2])
		}
		return m[1] + "{{ .Values." + v + " }}", nil
	}
	if m := replicasLine.FindStringSubmatch(l); m != nil && kind == "Deployment" {
		d.replicas = m[2]
		return m[1] + "{{ .Values.controller.replicas }}", nil
	}
	if m := imageLine.FindStringSubmatch(l); m != nil {
		switch {
		case m[2] == d.imageName:
			return m[1] + "{{ .Values.image.repository }}:{{ .Values.image.tag }}", nil
		case strings.Contains(m[2], "/csi-node-driver-registrar:"):
			d.registrar = m[2]
			return m[1] + "{{ .Values.registrar.image }}", nil
		}
		return "", fmt.Errorf("image %s has no value in the chart", m[2])
	}
	for _, ns := range chartNamespaces {
		tpl := "{{ .Values." + ns.value + " }}"
		if strings.HasSuffix(l, "--leader-elect-namespace="+ns.name) {
			l = strings.TrimSuffix(l, ns.name) + tpl
		}
		l = strings.ReplaceAll(l, "system:serviceaccount:"+ns.name+":", "system:serviceaccount:"+tpl+":")
	}
	l = replaceKubeletDir(l)
	return l, nil
}

// replaceKubeletDir templates every path under the kubelet's root: the
// driver's mounts must be at the same paths inside its container as on the
// node, where the kubelet names them.
func replaceKubeletDir(l string) string {
	var b strings.Builder
	for {
		i := strings.Index(l, kubeletDir)
		if i < 0 {
			b.WriteString(l)
			return b.String()
		}
		after := l[i+len(kubeletDir):]
		b.WriteString(l[:i])
		if after == "" || after[0] == '/' {
			b.WriteString("{{ .Values.kubeletDir }}")
		} else {
			b.WriteString(kubeletDir)
		}
		l = after
	}
}

func namespaceValue(name string) string {
	for _, ns := range chartNamespaces {
		if ns.name == name {
			return ns.value
		}
	}
	return ""
}

func chartYAML(d *chartDefaults) string {
	return fmt.Sprintf(`# Generated by `+"`go generate ./deploy/`"+` from deploy/: edit those files, not this one.
apiVersion: v2
name: volplane
description: The Kubernetes persistent-volume control plane (binder, attach/detach, expansion, snapshots) and its bundled node-local CSI driver.
type: application
version: %s
appVersion: %s
# Kubernetes 1.30 or later (the node role's ValidatingAdmissionPolicy).
# No kubeVersion: Helm would refuse the embedded API server of volplane
# up, which reports the version v0.0.0-master.
home: https://github.com/volplane/volplane
`, strings.TrimPrefix(d.tag, "v"), d.tag)
}

func valuesYAML(d *chartDefaults) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Generated by `go generate ./deploy/` from deploy/: edit those files, not this one.\n")
	b.WriteString("# The defaults render the objects of `kubectl apply -k deploy/`.\n\n")
	for _, ns := range chartNamespaces {
		fmt.Fprintf(&b, "# %s\n%s: %s\n", map[string]string{
			"namespace":           "The controller, the node DaemonSet and the controller's leader election Lease.",
			"nodeNamespace":       "The node-local provisioners' heartbeat Leases (no pod runs there).",
			"csiSidecarNamespace": "The Leases of the CSI sidecar role of a central driver (no pod runs there).",
		}[ns.value], ns.value, ns.name)
	}
	fmt.Fprintf(&b, "\n# volplane's image (controller, driver and node provisioner): a release, never latest.\nimage:\n  repository: %s\n  tag: %s\n", d.repository, d.tag)
	fmt.Fprintf(&b, "\nregistrar:\n  # The upstream node-driver-registrar, beside the driver on every node.\n  image: %s\n", d.registrar)
	fmt.Fprintf(&b, "\n# The kubelet's root directory on the nodes (--root-dir); some distributions move it.\nkubeletDir: %s\n", kubeletDir)
	for _, w := range []string{"controller", "node"} {
		fmt.Fprintf(&b, "\n%s:\n", w)
		if w == "controller" {
			fmt.Fprintf(&b, "  # Leader-elected replicas: one runs the loops, the others stand by.\n  replicas: %s\n", d.replicas)
		}
		for _, key := range []string{"nodeSelector", "tolerations"} {
			v, ok := d.scheduling[w][key]
			if !ok {
				v = map[string]any{"nodeSelector": map[string]any{}, "tolerations": []any{}}[key]
			}
			data, err := yaml.Marshal(map[string]any{key: v})
			if err != nil {
				return nil, err
			}
			b.WriteString(indent(string(data), "  "))
		}
	}
	for _, part := range []struct{ value, what string }{
		{"admissionPolicy", "The ValidatingAdmissionPolicy that keeps the node role to its own node's volumes (admission-node.yaml)."},
		{"tenantRoles", "Snapshots for the built-in edit and view roles (rbac-tenants.yaml)."},
		{"csiSidecarRoles", "The role of the CSI sidecars of a central driver (rbac-csi-sidecar.yaml)."},
	} {
		fmt.Fprintf(&b, "\n# %s\n%s:\n  enabled: true\n", part.what, part.value)
	}
	b.WriteString("\n# The snapshot API's CustomResourceDefinitions are in crds/: Helm installs them\n# first and never deletes them; `helm install --skip-crds` leaves them out.\n")
	return b.Bytes(), nil
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = by + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// valuesSchema is what Helm checks the values against before it renders
// (install, upgrade, template, lint): a misspelt value or one of the wrong
// type is refused rather than ignored.
const valuesSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "volplane chart values (generated by go generate ./deploy/)",
  "type": "object",
  "additionalProperties": false,
  "required": ["namespace", "nodeNamespace", "csiSidecarNamespace", "image", "registrar", "kubeletDir", "controller", "node",
    "admissionPolicy", "tenantRoles", "csiSidecarRoles"],
  "definitions": {
    "namespace": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"},
    "scheduling": {
      "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
      "tolerations": {"type": "array", "items": {"type": "object"}}
    },
    "part": {"type": "object", "additionalProperties": false, "required": ["enabled"], "properties": {"enabled": {"type": "boolean"}}}
  },
  "properties": {
    "namespace": {"$ref": "#/definitions/namespace"},
    "nodeNamespace": {"$ref": "#/definitions/namespace"},
    "csiSidecarNamespace": {"$ref": "#/definitions/namespace"},
    "image": {"type": "object", "additionalProperties": false, "required": ["repository", "tag"],
      "properties": {"repository": {"type": "string", "minLength": 1}, "tag": {"type": "string", "minLength": 1}}},
    "registrar": {"type": "object", "additionalProperties": false, "required": ["image"],
      "properties": {"image": {"type": "string", "minLength": 1}}},
    "kubeletDir": {"type": "string", "pattern": "^/.*[^/]$"},
    "controller": {"type": "object", "additionalProperties": false, "required": ["replicas"],
      "properties": {"replicas": {"type": "integer", "minimum": 0},
        "nodeSelector": {"$ref": "#/definitions/scheduling/nodeSelector"},
        "tolerations": {"$ref": "#/definitions/scheduling/tolerations"}}},
    "node": {"type": "object", "additionalProperties": false,
      "properties": {"nodeSelector": {"$ref": "#/definitions/scheduling/nodeSelector"},
        "tolerations": {"$ref": "#/definitions/scheduling/tolerations"}}},
    "admissionPolicy": {"$ref": "#/definitions/part"},
    "tenantRoles": {"$ref": "#/definitions/part"},
    "csiSidecarRoles": {"$ref": "#/definitions/part"}
  }
}
`
