package cluster

import (
	"slices"
	"testing"
)

// kube-controller-manager gets client limits only when asked, -1 meaning
// none, beside the feature gates.
func TestControllerManagerExtraArgs(t *testing.T) {
	if got := (Config{}).controllerManagerExtra(); len(got) != 0 {
		t.Errorf("no limits asked: %v", got)
	}
	got := Config{FeatureGates: "A=true", ControllerManagerQPS: -1, ControllerManagerBurst: 0}.controllerManagerExtra()
	want := []string{"--feature-gates=A=true", "--kube-api-qps=-1", "--kube-api-burst=0"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	got = Config{ControllerManagerQPS: 20, ControllerManagerBurst: 30}.controllerManagerExtra()
	if !slices.Equal(got, []string{"--kube-api-qps=20", "--kube-api-burst=30"}) {
		t.Errorf("got %v", got)
	}
}
