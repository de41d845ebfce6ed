package cluster

import (
	"runtime/debug"
	"strings"
	_ "unsafe" // go:linkname, to stamp the embedded components' version

	"k8s.io/component-base/version"
)

// The version the embedded kube-apiserver, scheduler and controller-manager
// report is stamped into k8s.io/component-base/version by the Kubernetes
// build's -ldflags -X, which neither `go run` nor `go build` of volplane
// passes: unstamped, /version says v0.0.0-master, and clients that check
// the server's version (Helm's kubeVersion, kubectl's skew warning) refuse
// or warn. When the build did not stamp it, stampVersion writes the
// version of k8s.io/kubernetes that go.mod requires, as the build would
// have.
//
//go:linkname gitVersion k8s.io/component-base/version.gitVersion
var gitVersion string

//go:linkname gitMajor k8s.io/component-base/version.gitMajor
var gitMajor string

//go:linkname gitMinor k8s.io/component-base/version.gitMinor
var gitMinor string

//go:linkname gitTreeState k8s.io/component-base/version.gitTreeState
var gitTreeState string

func init() {
	if !strings.HasPrefix(version.Get().GitVersion, "v0.0.0") {
		return
	}
	info, _ := debug.ReadBuildInfo()
	if v, major, minor, ok := kubeVersion(info); ok {
		gitVersion, gitMajor, gitMinor, gitTreeState = v, major, minor, "clean"
		// Get reads a copy taken at the package's init: renew it (equal
		// to the stamped version now, so it is accepted).
		_ = version.SetDynamicVersion(v)
	}
}

// kubeVersion is the version of k8s.io/kubernetes the binary was built
// with, as the Kubernetes build stamps it; not ok when the build info does
// not say (test binaries carry no dependencies).
func kubeVersion(info *debug.BuildInfo) (v, major, minor string, ok bool) {
	if info == nil {
		return "", "", "", false
	}
	for _, m := range info.Deps {
		if m.Path != "k8s.io/kubernetes" {
			continue
		}
		v = m.Version
		if m.Replace != nil {
			v = m.Replace.Version
		}
		major, rest, ok1 := strings.Cut(strings.TrimPrefix(v, "v"), ".")
		minor, _, ok2 := strings.Cut(rest, ".")
		if !ok1 || !ok2 || major == "0" || !strings.HasPrefix(v, "v") {
			return "", "", "", false
		}
		return v, major, minor, true
	}
	return "", "", "", false
}
