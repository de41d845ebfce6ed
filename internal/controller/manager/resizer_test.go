package manager

import (
	"strings"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/csi"
)

// --controllers resizer needs a CSI endpoint, and builds the loop over the
// pool's drivers, counted for /readyz.
func TestResizerNeedsDriversAndIsCountedForReadiness(t *testing.T) {
	cfg := Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}, Controllers: []string{Resizer}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "the resizer needs at least one CSI endpoint") {
		t.Errorf("Validate without endpoints: %v", err)
	}
	if !needsDrivers(cfg.Controllers) {
		t.Error("the resizer's drivers are not dialed")
	}
	client := fake.NewClientset()
	events := record.NewBroadcaster()
	defer events.Shutdown()
	l := &loops{want: 1}
	pool := csi.NewPool(&csi.Endpoint{Info: csi.Info{Driver: "d.csi.test", Controller: true, ControllerExpand: true}})
	if _, err := newResizer(cfg, client, informers.NewSharedInformerFactory(client, 0), events, l, pool); err != nil {
		t.Fatal(err)
	}
	if len(l.running) != 1 || l.ready() {
		t.Errorf("running %d, ready %v: want the loop counted and not ready before it runs", len(l.running), l.ready())
	}
}
