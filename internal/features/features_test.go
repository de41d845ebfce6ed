package features

import (
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
)

func TestDefaultsAreKubernetes137(t *testing.T) {
	want := map[string]bool{
		string(PersistentVolumeClaimUnusedSinceTime): true,
		string(CSIVolumeHealth):                      false,
		string(VolumeAttributesClass):                true,
		string(MutableCSINodeAllocatableCount):       true,
		string(CrossNamespaceVolumeDataSource):       false,
	}
	g := Defaults()
	for name, on := range want {
		if got := g.Enabled(featuregate.Feature(name)); got != on {
			t.Errorf("%s: enabled %v, want %v (Kubernetes %s default)", name, got, on, Version)
		}
	}
}

func TestFlagSetsGatesAndRefusesLockedOrUnknown(t *testing.T) {
	g := New()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	AddFlag(g, fs)
	if err := fs.Parse([]string{"--feature-gates=CSIVolumeHealth=true,PersistentVolumeClaimUnusedSinceTime=false"}); err != nil {
		t.Fatal(err)
	}
	if !g.Enabled(CSIVolumeHealth) || g.Enabled(PersistentVolumeClaimUnusedSinceTime) {
		t.Errorf("flag not applied: CSIVolumeHealth=%v Unused=%v", g.Enabled(CSIVolumeHealth), g.Enabled(PersistentVolumeClaimUnusedSinceTime))
	}
	if Defaults().Enabled(CSIVolumeHealth) {
		t.Error("setting one gate changed Defaults")
	}
	for _, bad := range []string{"VolumeAttributesClass=false", "NoSuchGate=true"} {
		if err := New().Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	all := New()
	if err := all.Set("AllAlpha=true"); err != nil {
		t.Fatal(err)
	}
	if !all.Enabled(CSIVolumeHealth) || !all.Enabled(CrossNamespaceVolumeDataSource) {
		t.Error("AllAlpha=true did not enable the alpha gates")
	}
}
