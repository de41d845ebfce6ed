package attacher

import (
	"fmt"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
)

// `volplane controller --controllers attacher` runs the loop over the
// drivers it dials.
func TestControllerManagerRunsTheAttacher(t *testing.T) {
	e := newEnv(t)
	loops := stacktest.StartLoops(manager.Config{REST: stacktest.ControlPlane(t).RESTConfig,
		Controllers: []string{manager.Attacher}, CSIEndpoints: bed.endpoints, Workers: 2, ResyncPeriod: 2 * time.Second})
	t.Cleanup(func() {
		if err := loops.Stop(); err != nil {
			t.Errorf("loops: %v", err)
		}
	})
	pv, handle := e.volume(attaching)
	name := e.attachment(pv, bed.node).Name
	stacktest.Eventually(t, "attached by the manager's attacher", func() string {
		if va := e.getVA(name); va == nil || !va.Status.Attached {
			return fmt.Sprintf("not attached: %v", va)
		}
		return ""
	}, loops.EndedEarly)
	if n := bed.calls.count("ControllerPublishVolume", handle); n != 1 {
		t.Errorf("ControllerPublishVolume called %d times", n)
	}
}
