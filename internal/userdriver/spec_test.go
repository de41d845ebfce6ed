package userdriver

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var twoNodes = []string{"node-1", "node-2"}

func TestParseADriverCommandAndItsOptions(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "creds")
	if err := os.WriteFile(secret, []byte("# comment\nuser=admin\n\npassword=s e=cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	specs, err := Parse(Flags{
		Drivers:         []string{`x.example.com=/bin/drv --endpoint={endpoint} --node "{node}" --state '{dir}/a b'`},
		Endpoints:       []string{"y.example.com=controller=unix:///c.sock,node-1=unix:///n1.sock,node-2=unix:///n2.sock"},
		PerNode:         []string{"x.example.com"},
		Classes:         []string{"x.example.com:type=fast", "x.example.com:zone=a=b"},
		Attributes:      []string{"y.example.com:iops=3000"},
		Secrets:         []string{"x.example.com:provisioner=" + secret},
		PodInfoOnMount:  []string{"y.example.com"},
		StorageCapacity: []string{"x.example.com"},
		FSGroupPolicy:   []string{"y.example.com=File"},
	}, twoNodes)
	if err != nil {
		t.Fatal(err)
	}
	x, y := specs[0], specs[1]
	if want := []string{"/bin/drv", "--endpoint={endpoint}", "--node", "{node}", "--state", "{dir}/a b"}; !reflect.DeepEqual(x.Command, want) {
		t.Errorf("command %q, want %q", x.Command, want)
	}
	if !x.Started() || !x.PerNode || !x.StorageCapacity || x.Parameters["zone"] != "a=b" || x.Parameters["type"] != "fast" || x.Secrets[SecretProvisioner] != secret {
		t.Errorf("x: %+v", x)
	}
	if y.Started() || y.Controller != "unix:///c.sock" || y.Nodes["node-2"] != "unix:///n2.sock" || !y.PodInfoOnMount || y.FSGroupPolicy != "File" || y.Attributes["iops"] != "3000" {
		t.Errorf("y: %+v", y)
	}
	got := Expand(x.Command, "unix:///s.sock", "node-1", "/d/x", NodeRole)
	if want := []string{"/bin/drv", "--endpoint=unix:///s.sock", "--node", "node-1", "--state", "/d/x/a b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("expanded %q, want %q", got, want)
	}
	data, err := ReadSecrets(x)
	if err != nil || !reflect.DeepEqual(data[SecretProvisioner], map[string]string{"user": "admin", "password": "s e=cret"}) {
		t.Errorf("secrets %v, %v", data, err)
	}
}

func TestParseRefusesWhatCouldOnlyFailLater(t *testing.T) {
	for _, tc := range []struct {
		flags Flags
		want  string
	}{
		{Flags{Drivers: []string{"x.example.com"}}, "want NAME="},
		{Flags{Drivers: []string{"x.example.com=/bin/drv"}}, "must take {endpoint}"},
		{Flags{Drivers: []string{`x.example.com=/bin/drv "{endpoint}`}}, "the command"},
		{Flags{Drivers: []string{"Bad_Name=/bin/drv {endpoint}"}}, "driver name"},
		{Flags{Drivers: []string{"x.example.com=a {endpoint}", "x.example.com=b {endpoint}"}}, "named twice"},
		{Flags{Endpoints: []string{"y.example.com=node-1=unix:///a,node-2=unix:///b"}}, "no controller"},
		{Flags{Endpoints: []string{"y.example.com=controller=unix:///c,node-1=unix:///a"}}, "no socket for node node-2"},
		{Flags{Endpoints: []string{"y.example.com=controller=unix:///c,node-9=unix:///a"}}, "neither controller nor a simulated node"},
		{Flags{Endpoints: []string{"y.example.com=controller=tcp://1.2.3.4:5"}}, "only unix sockets"},
		{Flags{Drivers: []string{"x.example.com=d {endpoint}"}, Classes: []string{"z.example.com:a=b"}}, `no --driver or --driver-endpoint names driver "z.example.com"`},
		{Flags{Drivers: []string{"x.example.com=d {endpoint}"}, Classes: []string{"x.example.com:csi.storage.k8s.io/fstype=ext4"}}, "Kubernetes' own key"},
		{Flags{Drivers: []string{"x.example.com=d {endpoint}"}, Secrets: []string{"x.example.com:controller-publish=/etc/hosts"}}, "is none of provisioner"},
		{Flags{Drivers: []string{"x.example.com=d {endpoint}"}, Secrets: []string{"x.example.com:provisioner=/nonexistent"}}, "no such file"},
		{Flags{Drivers: []string{"x.example.com=d {endpoint}"}, FSGroupPolicy: []string{"x.example.com=Always"}}, "POLICY one of"},
		{Flags{Endpoints: []string{"y.example.com=controller=unix:///c,node-1=unix:///a,node-2=unix:///b"}, PerNode: []string{"y.example.com"}}, "only a driver started with --driver"},
	} {
		_, err := Parse(tc.flags, twoNodes)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.flags, err, tc.want)
		}
	}
}
