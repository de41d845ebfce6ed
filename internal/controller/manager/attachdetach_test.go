package manager

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// --controllers attachdetach alone needs no CSI endpoint and builds the
// loop, counted for /readyz.
func TestAttachDetachIsBuiltWithoutDrivers(t *testing.T) {
	cfg := Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}, Controllers: []string{AttachDetach}}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	client := fake.NewClientset()
	events := record.NewBroadcaster()
	defer events.Shutdown()
	l := &loops{want: 1}
	w := wiring{Config: cfg, Client: client, Informers: informers.NewSharedInformerFactory(client, 0),
		Events: events, Metrics: prometheus.NewRegistry()}
	runs, err := build(w, selectedRows(cfg), l)
	if err != nil || len(runs) != 1 {
		t.Fatalf("build: %d loops, %v; want the attachdetach loop", len(runs), err)
	}
	if len(l.running) != 1 || l.ready() {
		t.Errorf("running %d, ready %v: want the loop counted and not ready before it runs", len(l.running), l.ready())
	}
}
