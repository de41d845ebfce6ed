package userdriver

import (
	"fmt"
	"os"
	"slices"
	"strings"

	shellquote "github.com/kballard/go-shellquote"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/volplane/volplane/internal/endpoint"
)

// Spec is one user driver as the flags describe it.
type Spec struct {
	// Name is the driver's name: its CSIDriver's, the provisioner of its
	// classes; GetPluginInfo must answer it.
	Name string
	// Command is the command's words, placeholders not yet substituted;
	// nil when the user serves the driver (Endpoints).
	Command []string
	// PerNode: no controller process is started; every node's process
	// serves the controller service too (distributed provisioning, as the
	// bundled node-local driver), and the provisioner picks among them by
	// the driver's topology.
	PerNode bool
	// Controller and Nodes are the sockets of a driver the user runs:
	// the controller service's and each node's node service's.
	Controller string
	Nodes      map[string]string
	// Parameters go into the driver's StorageClasses (--driver-class).
	Parameters map[string]string
	// Attributes are the mutable parameters of the driver's
	// VolumeAttributesClass (--driver-attributes), made when it can modify
	// volumes.
	Attributes map[string]string
	// Secrets are the secret files by kind (--driver-secret).
	Secrets map[SecretKind]string
	// PodInfoOnMount, FSGroupPolicy and StorageCapacity go into its
	// CSIDriver: CSI does not report them.
	PodInfoOnMount  bool
	FSGroupPolicy   string
	StorageCapacity bool
}

// Started says volplane starts the driver's processes.
func (s Spec) Started() bool { return s.Command != nil }

// SecretKind is a kind of secret a StorageClass can name for a driver.
type SecretKind string

// The kinds --driver-secret takes: each names the secret of one CSI call
// (the StorageClass's csi.storage.k8s.io/<kind>-secret-name parameters).
const (
	SecretProvisioner SecretKind = "provisioner"
	SecretNodeStage   SecretKind = "node-stage"
	SecretNodePublish SecretKind = "node-publish"
	SecretExpand      SecretKind = "expand"
)

// parameter is the StorageClass parameter prefix of the kind's secret.
func (k SecretKind) parameter() string {
	if k == SecretExpand {
		return "csi.storage.k8s.io/controller-expand"
	}
	return "csi.storage.k8s.io/" + string(k)
}

var secretKinds = []SecretKind{SecretProvisioner, SecretNodeStage, SecretNodePublish, SecretExpand}

// Placeholders substituted in a driver's command.
const (
	PlaceholderEndpoint = "{endpoint}"
	PlaceholderNode     = "{node}"
	PlaceholderDir      = "{dir}"
	PlaceholderRole     = "{role}"
	// ControllerRole is {node} and {role} of the controller process.
	ControllerRole = "controller"
	// NodeRole is {role} of a node's process.
	NodeRole = "node"
)

// Flags are the raw --driver* flag values of `up` and `conformance`.
type Flags struct {
	Drivers         []string // NAME=CMD ARGS
	Endpoints       []string // NAME=controller=unix://...,node-1=unix://...
	PerNode         []string // NAME
	Classes         []string // NAME:KEY=VALUE
	Attributes      []string // NAME:KEY=VALUE
	Secrets         []string // NAME:KIND=FILE
	PodInfoOnMount  []string // NAME
	StorageCapacity []string // NAME
	FSGroupPolicy   []string // NAME=POLICY
}

// Any says a user driver was named.
func (f Flags) Any() bool { return len(f.Drivers)+len(f.Endpoints) > 0 }

// Parse turns the flags into one Spec per driver, in the order named,
// checked against the simulated nodes: every flag must name a driver given
// by --driver or --driver-endpoint, and a --driver-endpoint must name a
// socket for the controller and for every node.
func Parse(f Flags, nodes []string) ([]Spec, error) {
	var specs []Spec
	index := map[string]int{}
	add := func(s Spec, flag string) error {
		if err := validName(s.Name); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		if _, dup := index[s.Name]; dup {
			return fmt.Errorf("%s: driver %s is named twice", flag, s.Name)
		}
		index[s.Name] = len(specs)
		specs = append(specs, s)
		return nil
	}
	for _, v := range f.Drivers {
		s, err := parseDriver(v)
		if err == nil {
			err = add(s, "--driver "+v)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, v := range f.Endpoints {
		s, err := parseEndpoints(v, nodes)
		if err == nil {
			err = add(s, "--driver-endpoint "+v)
		}
		if err != nil {
			return nil, err
		}
	}
	spec := func(flag, v, name string) (*Spec, error) {
		i, ok := index[name]
		if !ok {
			return nil, fmt.Errorf("%s %s: no --driver or --driver-endpoint names driver %q", flag, v, name)
		}
		return &specs[i], nil
	}
	for _, v := range f.PerNode {
		s, err := spec("--driver-per-node", v, v)
		if err != nil {
			return nil, err
		}
		if !s.Started() {
			return nil, fmt.Errorf("--driver-per-node %s: only a driver started with --driver has processes per node", v)
		}
		s.PerNode = true
	}
	for _, v := range f.PodInfoOnMount {
		s, err := spec("--driver-pod-info-on-mount", v, v)
		if err != nil {
			return nil, err
		}
		s.PodInfoOnMount = true
	}
	for _, v := range f.StorageCapacity {
		s, err := spec("--driver-storage-capacity", v, v)
		if err != nil {
			return nil, err
		}
		s.StorageCapacity = true
	}
	for _, v := range f.FSGroupPolicy {
		name, policy, ok := strings.Cut(v, "=")
		if !ok || !slices.Contains(fsGroupPolicies, policy) {
			return nil, fmt.Errorf("--driver-fs-group-policy %s: want NAME=POLICY, POLICY one of %s", v, strings.Join(fsGroupPolicies, ", "))
		}
		s, err := spec("--driver-fs-group-policy", v, name)
		if err != nil {
			return nil, err
		}
		s.FSGroupPolicy = policy
	}
	params := func(flag string, values []string, into func(*Spec) *map[string]string) error {
		for _, v := range values {
			name, kv, ok := strings.Cut(v, ":")
			key, value, ok2 := strings.Cut(kv, "=")
			if !ok || !ok2 || key == "" {
				return fmt.Errorf("%s %s: want NAME:KEY=VALUE", flag, v)
			}
			if strings.HasPrefix(key, "csi.storage.k8s.io/") {
				return fmt.Errorf("%s %s: %s is Kubernetes' own key; give secrets with --driver-secret", flag, v, key)
			}
			s, err := spec(flag, v, name)
			if err != nil {
				return err
			}
			m := into(s)
			if *m == nil {
				*m = map[string]string{}
			}
			(*m)[key] = value
		}
		return nil
	}
	if err := params("--driver-class", f.Classes, func(s *Spec) *map[string]string { return &s.Parameters }); err != nil {
		return nil, err
	}
	if err := params("--driver-attributes", f.Attributes, func(s *Spec) *map[string]string { return &s.Attributes }); err != nil {
		return nil, err
	}
	for _, v := range f.Secrets {
		name, kv, ok := strings.Cut(v, ":")
		kind, file, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 || file == "" {
			return nil, fmt.Errorf("--driver-secret %s: want NAME:KIND=FILE", v)
		}
		if !slices.Contains(secretKinds, SecretKind(kind)) {
			return nil, fmt.Errorf("--driver-secret %s: kind %q is none of %s", v, kind, kindList())
		}
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("--driver-secret %s: %w", v, err)
		}
		s, err := spec("--driver-secret", v, name)
		if err != nil {
			return nil, err
		}
		if s.Secrets == nil {
			s.Secrets = map[SecretKind]string{}
		}
		s.Secrets[SecretKind(kind)] = file
	}
	return specs, nil
}

var fsGroupPolicies = []string{"ReadWriteOnceWithFSType", "File", "None"}

func kindList() string {
	out := make([]string, len(secretKinds))
	for i, k := range secretKinds {
		out[i] = string(k)
	}
	return strings.Join(out, ", ")
}

// parseDriver reads NAME=CMD ARGS.
func parseDriver(v string) (Spec, error) {
	name, cmd, ok := strings.Cut(v, "=")
	if !ok {
		return Spec{}, fmt.Errorf("--driver %s: want NAME='CMD ARGS'", v)
	}
	words, err := shellquote.Split(cmd)
	if err != nil {
		return Spec{}, fmt.Errorf("--driver %s: the command: %w", v, err)
	}
	if len(words) == 0 {
		return Spec{}, fmt.Errorf("--driver %s: the command is empty", v)
	}
	if !strings.Contains(cmd, PlaceholderEndpoint) {
		return Spec{}, fmt.Errorf("--driver %s: the command must take %s, the socket volplane dials (e.g. --endpoint=%s)", v, PlaceholderEndpoint, PlaceholderEndpoint)
	}
	return Spec{Name: name, Command: words}, nil
}

// parseEndpoints reads NAME=controller=unix://...,node-1=unix://...
func parseEndpoints(v string, nodes []string) (Spec, error) {
	name, rest, ok := strings.Cut(v, "=")
	if !ok || rest == "" {
		return Spec{}, fmt.Errorf("--driver-endpoint %s: want NAME=controller=unix://...,NODE=unix://...", v)
	}
	s := Spec{Name: name, Nodes: map[string]string{}}
	for part := range strings.SplitSeq(rest, ",") {
		role, addr, ok := strings.Cut(part, "=")
		if !ok {
			return Spec{}, fmt.Errorf("--driver-endpoint %s: %q is not ROLE=unix://PATH", v, part)
		}
		if _, err := endpoint.Parse(addr); err != nil {
			return Spec{}, fmt.Errorf("--driver-endpoint %s: %w", v, err)
		}
		switch {
		case role == ControllerRole:
			s.Controller = addr
		case slices.Contains(nodes, role):
			s.Nodes[role] = addr
		default:
			return Spec{}, fmt.Errorf("--driver-endpoint %s: %q is neither controller nor a simulated node (%s)", v, role, strings.Join(nodes, ", "))
		}
	}
	if s.Controller == "" {
		return Spec{}, fmt.Errorf("--driver-endpoint %s: no controller=unix://... socket", v)
	}
	for _, n := range nodes {
		if s.Nodes[n] == "" {
			return Spec{}, fmt.Errorf("--driver-endpoint %s: no socket for node %s (every simulated node needs the driver's node service)", v, n)
		}
	}
	return s, nil
}

// validName: a driver's name is a CSIDriver's name, a DNS subdomain of at
// most 63 characters.
func validName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("driver name %q: %s", name, strings.Join(errs, "; "))
	}
	if len(name) > 63 {
		return fmt.Errorf("driver name %q: longer than 63 characters", name)
	}
	return nil
}

// Expand substitutes the placeholders in each word of command.
func Expand(command []string, endpoint, node, dir, role string) []string {
	r := strings.NewReplacer(PlaceholderEndpoint, endpoint, PlaceholderNode, node, PlaceholderDir, dir, PlaceholderRole, role)
	out := make([]string, len(command))
	for i, w := range command {
		out[i] = r.Replace(w)
	}
	return out
}
