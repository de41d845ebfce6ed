package rbac

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/deploy"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/controller/provisioner"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// namespace is deploy/'s namespace.
const namespace = "volplane"

// role is one deployed role: the ServiceAccount its pods run as and the
// `volplane controller` arguments of its container.
type role struct {
	serviceAccount string
	args           []string
	// drivers says which of the bundled drivers the role's CSI loops serve.
	drivers []string
}

// sidecarArgs are those of the CSI sidecar container of a central driver's
// controller (README.md, "Deploying to a cluster"); deploy/ ships its
// ServiceAccount, roles and the namespace of its Leases, not the driver.
var sidecarArgs = []string{"controller", "--controllers=provisioner,attacher,resizer,snapshotter",
	"--csi-endpoint=unix:///csi/csi.sock", "--leader-elect-namespace=volplane-csi-sidecar", "--leader-elect-name=volplane-csi-sidecar"}

// roles are the roles deploy/ runs: the central loops (the Deployment),
// the node-local provisioner (the DaemonSet's container beside the
// bundled driver), and the CSI sidecar of a central driver, served here by
// the bundle's network driver.
func roles(objs []runtime.Object) ([]role, error) {
	controller, err := containerOf(objs, "Deployment", "volplane-controller", "controller")
	if err != nil {
		return nil, err
	}
	node, err := containerOf(objs, "DaemonSet", "volplane-node", "provisioner")
	if err != nil {
		return nil, err
	}
	node.drivers = []string{hostpath.DriverName}
	sidecar := role{serviceAccount: "volplane-csi-sidecar", args: sidecarArgs, drivers: []string{hostpath.NetworkDriverName}}
	return []role{controller, node, sidecar}, nil
}

// containerOf finds a workload's container in deploy/.
func containerOf(objs []runtime.Object, kind, name, container string) (role, error) {
	var spec *corev1.PodSpec
	for _, d := range deploy.Of[*appsv1.Deployment](objs) {
		if kind == "Deployment" && d.Name == name {
			spec = &d.Spec.Template.Spec
		}
	}
	for _, d := range deploy.Of[*appsv1.DaemonSet](objs) {
		if kind == "DaemonSet" && d.Name == name {
			spec = &d.Spec.Template.Spec
		}
	}
	if spec == nil {
		return role{}, fmt.Errorf("deploy/ has no %s %s", kind, name)
	}
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == container })
	if i < 0 {
		return role{}, fmt.Errorf("%s %s has no container %s", kind, name, container)
	}
	return role{serviceAccount: spec.ServiceAccountName, args: spec.Containers[i].Args}, nil
}

// configs are the manager configurations the role's arguments say, with
// the endpoints of the bundled drivers it serves and the REST
// configuration given: one, or for a node deployment one per node (the
// DaemonSet's pod on each), each with its node's endpoint and a short race
// delay. Other flags are skipped: the metrics address (none here), the
// node name (set per node) and the race delays.
func (r role) configs(rc *rest.Config, stack *stacktest.Stack) ([]manager.Config, error) {
	cfg := manager.DefaultConfig()
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.StringSliceVar(&cfg.Controllers, "controllers", cfg.Controllers, "")
	fs.BoolVar(&cfg.LeaderElect, "leader-elect", cfg.LeaderElect, "")
	fs.StringVar(&cfg.LeaderElectNamespace, "leader-elect-namespace", cfg.LeaderElectNamespace, "")
	fs.StringVar(&cfg.LeaderElectName, "leader-elect-name", cfg.LeaderElectName, "")
	nodeDeployment := fs.Bool("node-deployment", false, "")
	if len(r.args) == 0 || r.args[0] != "controller" {
		return nil, fmt.Errorf("%s runs %q, not volplane controller", r.serviceAccount, r.args)
	}
	if err := fs.Parse(r.args[1:]); err != nil {
		return nil, fmt.Errorf("%s: %w", r.serviceAccount, err)
	}
	cfg.REST, cfg.MetricsAddr, cfg.MaxWaitForUnmount = rc, "", unmountWait
	cfg.HeartbeatPeriod = heartbeatPeriod // renewed within the lifecycle
	if !*nodeDeployment {
		for _, d := range r.drivers {
			cfg.CSIEndpoints = append(cfg.CSIEndpoints, endpointsOf(stack, d)...)
		}
		return []manager.Config{cfg}, nil
	}
	var out []manager.Config
	for _, node := range stack.CP.Nodes {
		c := cfg
		c.CSIEndpoints = stack.Drivers.NodeEndpoints[node][:1] // the node-local driver's socket
		c.NodeDeployment = &provisioner.NodeDeployment{NodeName: node, ImmediateBinding: true,
			BaseDelay: 50 * time.Millisecond, MaxDelay: time.Second}
		out = append(out, c)
	}
	return out, nil
}

// endpointsOf are the stack's controller endpoints of one bundled driver:
// the network driver's is the last, the node-local ones come before it.
func endpointsOf(stack *stacktest.Stack, driver string) []string {
	all := stack.Drivers.Endpoints
	if driver == hostpath.NetworkDriverName {
		return all[len(all)-1:]
	}
	return all[:len(all)-1]
}

// restConfig authenticates as the role's ServiceAccount alone: a bearer
// token from the TokenRequest API and the cluster's CA, no client
// certificate; every request goes through log. A token for a node is
// bound to that Node, so the API server knows the node it comes from, as
// it knows the node of a pod's projected token (the DaemonSet's).
func restConfig(ctx context.Context, stack *stacktest.Stack, serviceAccount, node string, log *requestLog) (*rest.Config, error) {
	spec := authv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}
	if node != "" {
		n, err := stack.CP.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		spec.BoundObjectRef = &authv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: n.Name, UID: n.UID}
	}
	tr, err := stack.CP.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount,
		&authv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s: %w", serviceAccount, err)
	}
	rc := rest.AnonymousClientConfig(stack.CP.RESTConfig)
	rc.BearerToken = tr.Status.Token
	rc.QPS, rc.Burst = -1, 0
	rc.Wrap(log.wrap)
	return rc, nil
}
