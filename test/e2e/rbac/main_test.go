// Package rbac checks deploy/'s permissions against what the loops really
// do. It applies deploy/'s Namespace, ServiceAccounts, roles and bindings
// (and its CSIDriver and classes) to the embedded, real kube-apiserver,
// runs each deployed role's loops with a token of that role's
// ServiceAccount, drives the whole volume lifecycle through them and then
// asserts that no request was forbidden and that every rule each role is
// granted was used. The bundled drivers and the node agent keep the admin
// credentials: they stand for the kubelet and for the drivers, which call
// no API.
package rbac

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/volplane/volplane/deploy"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// unmountWait is attachdetach's wait for an unwanted volume to be
// unmounted before a forced detach, shortened from 6 minutes.
const unmountWait = 3 * time.Second

// heartbeatPeriod is the provisioner's heartbeat period, shortened from
// 10 s so that the lifecycle sees renewals.
const heartbeatPeriod = 200 * time.Millisecond

// bed is the package's test bed: deploy/ decoded and applied, and the
// stack with its loops stopped (each role runs its own).
var bed struct {
	deploy []runtime.Object
	stack  *stacktest.Stack
}

// deploy/'s CSIDriver and classes go first: the stack registers only what
// is missing (the network driver and its class, which deploy/ does not
// ship).
func TestMain(m *testing.M) {
	support.Main(m, 1, applyDeploy, support.StackSetup("vp-rbac-", stacktest.StackConfig{
		Loops: func(c *manager.Config) { c.MaxWaitForUnmount = unmountWait },
	}, func(_ *cluster.ControlPlane, s *stacktest.Stack) error {
		bed.stack = s
		// The stack's loops run as admin: the roles' loops replace them.
		return s.StopLoops()
	}))
}

func applyDeploy(cp *cluster.ControlPlane) (func(), error) {
	objs, err := deploy.Objects()
	if err != nil {
		return nil, err
	}
	if err := apply(context.Background(), cp.RESTConfig, objs); err != nil {
		return nil, err
	}
	bed.deploy = objs
	return func() {}, nil
}
