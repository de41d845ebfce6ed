package cluster

import (
	"runtime/debug"
	"testing"
)

// The embedded components report the k8s.io/kubernetes version the binary
// was built with, as the Kubernetes build would stamp it; nothing when the
// build info does not name one.
func TestKubeVersionIsTheOneOfTheBuild(t *testing.T) {
	dep := func(path, v string, replace *debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Deps: []*debug.Module{{Path: "k8s.io/api", Version: "v0.36.3"}, {Path: path, Version: v, Replace: replace}}}
	}
	for name, c := range map[string]struct {
		info            *debug.BuildInfo
		v, major, minor string
		ok              bool
	}{
		"required":        {info: dep("k8s.io/kubernetes", "v1.36.3", nil), v: "v1.36.3", major: "1", minor: "36", ok: true},
		"replaced":        {info: dep("k8s.io/kubernetes", "v1.36.0", &debug.Module{Path: "k8s.io/kubernetes", Version: "v1.36.3"}), v: "v1.36.3", major: "1", minor: "36", ok: true},
		"prerelease":      {info: dep("k8s.io/kubernetes", "v1.37.0-rc.1", nil), v: "v1.37.0-rc.1", major: "1", minor: "37", ok: true},
		"no build info":   {},
		"not a dep":       {info: dep("k8s.io/client-go", "v0.36.3", nil)},
		"a local replace": {info: dep("k8s.io/kubernetes", "v1.36.3", &debug.Module{Path: "../kubernetes"})},
		"staging version": {info: dep("k8s.io/kubernetes", "v0.0.0", nil)},
	} {
		v, major, minor, ok := kubeVersion(c.info)
		if v != c.v || major != c.major || minor != c.minor || ok != c.ok {
			t.Errorf("%s: got %q %q %q %v, want %q %q %q %v", name, v, major, minor, ok, c.v, c.major, c.minor, c.ok)
		}
	}
}
