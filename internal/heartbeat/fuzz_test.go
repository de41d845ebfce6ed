package heartbeat

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzNames: a provisioner name comes from a class or from a claim's
// storage-provisioner annotation, which the claim's owner writes. Whatever
// it is, the Lease name is a valid name, the label value a valid value,
// the selector parses and selects exactly that value, and names readable
// as they are stay as they are.
func FuzzNames(f *testing.F) {
	f.Add("hostpath.csi.volplane.io", "node-1")
	f.Add("Hostpath.CSI.io", "")
	f.Add("a,b=c", "x--y")
	f.Add("evil!=x,tier in (a)", "\x00")
	f.Add(strings.Repeat("ä", 70), strings.Repeat("n", 250))
	f.Fuzz(func(t *testing.T, provisioner, node string) {
		lease := LeaseName(provisioner, node)
		if errs := validation.IsDNS1123Subdomain(lease); len(errs) > 0 {
			t.Fatalf("LeaseName(%q, %q) = %q: %v", provisioner, node, lease, errs)
		}
		value := LabelValue(provisioner)
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			t.Fatalf("LabelValue(%q) = %q: %v", provisioner, value, errs)
		}
		if len(validation.IsValidLabelValue(provisioner)) == 0 && value != provisioner {
			t.Fatalf("LabelValue(%q) = %q: a valid value was changed", provisioner, value)
		}
		sel, err := labels.Parse(Selector(provisioner))
		if err != nil {
			t.Fatalf("Selector(%q) = %q: %v", provisioner, Selector(provisioner), err)
		}
		if !sel.Matches(labels.Set{LabelProvisioner: value}) || sel.Matches(labels.Set{LabelProvisioner: value + "x"}) {
			t.Fatalf("Selector(%q) = %q does not select exactly %q", provisioner, sel, value)
		}
		if sidecar := SidecarLeaseName(provisioner); strings.ContainsFunc(sidecar, func(r rune) bool {
			return !(r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			t.Fatalf("SidecarLeaseName(%q) = %q", provisioner, sidecar)
		}
	})
}
