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

// --controllers resizer needs a CSI endpoint, and builds its two loops
// (resizer and modifier, the external-resizer's two controllers) over the
// pool's drivers, both counted for /readyz.
func TestResizerNeedsDriversAndIsCountedForReadiness(t *testing.T) {
	cfg := Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}, Controllers: []string{Resizer}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "the resizer needs at least one CSI endpoint") {
		t.Errorf("Validate without endpoints: %v", err)
	}
	if !needsDrivers(cfg) {
		t.Error("the resizer's drivers are not dialed")
	}
	client := fake.NewClientset()
	events := record.NewBroadcaster()
	defer events.Shutdown()
	l := &loops{want: 1}
	pool := csi.NewPool(&csi.Endpoint{Info: csi.Info{Driver: "d.csi.test", Controller: true, ControllerExpand: true}})
	w := wiring{Config: cfg, Client: client, Informers: informers.NewSharedInformerFactory(client, 0), Events: events, Pool: pool}
	if _, err := build(w, selectedRows(cfg), l); err != nil {
		t.Fatal(err)
	}
	if len(l.running) != 2 || l.ready() {
		t.Errorf("running %d, ready %v: want both loops counted and not ready before they run", len(l.running), l.ready())
	}
}
