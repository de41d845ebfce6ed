package provisioning

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
)

var (
	provisionerAndBinder = []string{manager.Binder, manager.Provisioner}
	binderOnly           = []string{manager.Binder}
	provisionerOnly      = []string{manager.Provisioner}
)

// loops is one manager.Run in this process, as `volplane up` runs it but
// with a short resync so that retries and safety nets stay quick.
type loops = stacktest.Loops

func startLoops(rc *rest.Config, names ...string) *loops {
	return startLoopsServing(rc, endpoints(), names...)
}

// startLoopsServing is startLoops with only the given CSI endpoints served.
// The provisioner marks every claim in progress before its create (a
// ProvisioningMarkAfter of 0), so that no crash the tests inject can leak.
func startLoopsServing(rc *rest.Config, eps []string, names ...string) *loops {
	return stacktest.StartLoops(loopsConfig(rc, eps, names...))
}

func loopsConfig(rc *rest.Config, eps []string, names ...string) manager.Config {
	return manager.Config{
		REST: rc, Controllers: names, CSIEndpoints: eps,
		Workers: 4, ResyncPeriod: 2 * time.Second,
	}
}

// startLoopsMarkingLate is startLoops with the provisioner's default mark
// delay: a create the driver answers at once writes nothing to the claim.
func startLoopsMarkingLate(rc *rest.Config, names ...string) *loops {
	cfg := loopsConfig(rc, endpoints(), names...)
	cfg.ProvisioningMarkAfter = manager.DefaultConfig().ProvisioningMarkAfter
	return stacktest.StartLoops(cfg)
}

// runLoops starts loops for the rest of the test.
func runLoops(t *testing.T, rc *rest.Config, names ...string) *loops {
	t.Helper()
	l := startLoops(rc, names...)
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Errorf("loops %v: %v", names, err)
		}
	})
	return l
}

// withoutSharedLoops stops the shared binder and provisioner for the rest of
// the test, and starts them again after it.
func withoutSharedLoops(t *testing.T) {
	t.Helper()
	if err := bed.shared.Stop(); err != nil {
		t.Fatalf("shared loops: %v", err)
	}
	rc := stacktest.ControlPlane(t).RESTConfig
	t.Cleanup(func() { bed.shared = startLoops(rc, provisionerAndBinder...) })
}
