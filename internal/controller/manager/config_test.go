package manager

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/controller/provisioner"
)

func TestValidateProvisionerConfig(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:1"}
	cases := []struct {
		cfg  Config
		want string // "" = valid
	}{
		{Config{REST: rc, Controllers: []string{Binder}}, ""},
		{Config{REST: rc, Controllers: []string{Binder}, CSIEndpoints: []string{"unix:///tmp/a.sock"}}, ""},
		{Config{REST: rc, Controllers: []string{Provisioner}, CSIEndpoints: []string{"unix:///tmp/a.sock", "unix:///tmp/b.sock"}}, ""},
		{Config{REST: rc, Controllers: []string{Binder, Provisioner}}, "at least one CSI endpoint"},
		// The protection loops need no CSI endpoint, alone or with the binder.
		{Config{REST: rc, Controllers: []string{PVCProtection}}, ""},
		{Config{REST: rc, Controllers: []string{PVProtection, Binder}}, ""},
		{Config{REST: rc, Controllers: []string{Provisioner}, CSIEndpoints: []string{"unix:///tmp/a.sock", "/tmp/b.sock"}}, `"/tmp/b.sock"`},
		{Config{REST: rc, Controllers: []string{Provisioner}, CSIEndpoints: []string{"unix:///tmp/a.sock"}, HeartbeatPeriod: -time.Second}, "heartbeat period -1s"},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v, want valid", tc.cfg.Controllers, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v %v: error %v, want it to say %s", tc.cfg.Controllers, tc.cfg.CSIEndpoints, err, tc.want)
		}
	}
}

// Node deployment runs the node loops alone, the attacher among them (for
// its node's attachments), and nothing central.
func TestValidateNodeDeploymentConfig(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:1"}
	node := &provisioner.NodeDeployment{NodeName: "node-1"}
	sock := []string{"unix:///csi/csi.sock"}
	cases := []struct {
		controllers []string
		want        string // "" = valid
	}{
		{[]string{Provisioner, Capacity, Attacher, Resizer, Snapshotter}, ""},
		{[]string{Attacher}, ""},
		{[]string{Provisioner, Binder}, "node deployment runs only provisioner, capacity, attacher, resizer, snapshotter and health-monitor beside a node's driver; run binder in the central controller"},
		{[]string{AttachDetach}, "run attachdetach in the central controller"},
	}
	for _, tc := range cases {
		err := Config{REST: rc, Controllers: tc.controllers, CSIEndpoints: sock, NodeDeployment: node}.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v, want valid", tc.controllers, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want it to say %s", tc.controllers, err, tc.want)
		}
	}
	if got := (Config{NodeDeployment: node}).nodeName(); got != "node-1" {
		t.Errorf("node name %q, want node-1 (the attacher's Config.NodeName)", got)
	}
}

func TestReadyOnlyOnceEverySelectedLoopIs(t *testing.T) {
	l := &loops{want: 2}
	a, b := &fakeLoop{ready: true}, &fakeLoop{}
	l.started(a)
	if l.ready() {
		t.Error("ready with one of two loops built")
	}
	l.started(b)
	if l.ready() {
		t.Error("ready while a loop is not")
	}
	b.ready = true
	if !l.ready() {
		t.Error("not ready with every loop ready")
	}
}

type fakeLoop struct{ ready bool }

func (f *fakeLoop) Ready() bool { return f.ready }
