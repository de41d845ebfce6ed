package binding_test

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/binding"
)

func TestDefaultClass(t *testing.T) {
	cases := []struct {
		name    string
		classes []*storagev1.StorageClass
		want    string
	}{
		{"no class is marked", []*storagev1.StorageClass{newClass("a", "p")}, ""},
		{"\"false\" is not default", []*storagev1.StorageClass{newClass("a", "p", func(c *storagev1.StorageClass) {
			setAnn(&c.ObjectMeta, binding.AnnDefaultClass, "false")
		})}, ""},
		{"the GA annotation", []*storagev1.StorageClass{newClass("a", "p"), newClass("b", "p", isDefault(binding.AnnDefaultClass))}, "b"},
		{"the beta annotation", []*storagev1.StorageClass{newClass("b", "p", isDefault(binding.AnnBetaDefaultClass)), newClass("a", "p")}, "b"},
		{"the newest default wins", []*storagev1.StorageClass{
			newClass("old", "p", isDefault(binding.AnnDefaultClass), createdAt(100)),
			newClass("new", "p", isDefault(binding.AnnBetaDefaultClass), createdAt(200)),
		}, "new"},
		{"equal ages: first by name", []*storagev1.StorageClass{
			newClass("zeta", "p", isDefault(binding.AnnDefaultClass), createdAt(100)),
			newClass("alpha", "p", isDefault(binding.AnnDefaultClass), createdAt(100)),
		}, "alpha"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if c := binding.DefaultClass(tc.classes); c != nil {
				got = c.Name
			}
			if got != tc.want {
				t.Errorf("DefaultClass = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClassNames(t *testing.T) {
	if got := binding.ClaimClass(newClaim("c", "1Gi", claimClass("spec"), claimBetaClass("beta"))); got != "beta" {
		t.Errorf("claim class %q, want the beta annotation", got)
	}
	if binding.ClaimHasClass(newClaim("c", "1Gi")) || !binding.ClaimHasClass(newClaim("c", "1Gi", claimClass(""))) {
		t.Errorf("ClaimHasClass: nil means no class, \"\" is a class")
	}
	if got := binding.VolumeClass(newPV("p", "1Gi", withClass("spec"), withBetaClass(""))); got != "" {
		t.Errorf("volume class %q, want the (empty) beta annotation", got)
	}
	if binding.DelayBinding(nil) || binding.DelayBinding(newClass("a", "p")) || !binding.DelayBinding(newClass("a", "p", waitForConsumer())) {
		t.Errorf("DelayBinding wrong")
	}
}
