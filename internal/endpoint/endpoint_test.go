package endpoint

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	long := "/" + strings.Repeat("d", MaxSocketPath)
	for _, tc := range []struct {
		address, path, err string
	}{
		{address: "unix:///run/csi.sock", path: "/run/csi.sock"},
		{address: "unix:///run//x/../csi.sock", path: "/run/csi.sock"},
		{address: "", err: "is required"},
		{address: "tcp://127.0.0.1:1", err: "only unix sockets"},
		{address: "/run/csi.sock", err: "only unix sockets"},
		{address: "unix://csi.sock", err: "must be absolute"},
		{address: "unix://" + long, err: "longer than the 107"},
	} {
		path, err := Parse(tc.address)
		switch {
		case tc.err == "" && (err != nil || path != tc.path):
			t.Errorf("Parse(%q) = %q, %v; want %q", tc.address, path, err, tc.path)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q) = %q, %v; want an error with %q", tc.address, path, err, tc.err)
		}
	}
}

func TestFormatIsParsedBack(t *testing.T) {
	const path = "/var/lib/kubelet/plugins/d/csi.sock"
	got, err := Parse(Format(path))
	if err != nil || got != path {
		t.Errorf("Parse(Format(%q)) = %q, %v", path, got, err)
	}
}
