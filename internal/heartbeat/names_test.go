package heartbeat

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestLeaseNamesAreValidReadableAndDistinct(t *testing.T) {
	long := strings.Repeat("a", 63)
	cases := []struct {
		provisioner, node string
		want              string // "" = mapped: checked for validity and distinctness only
	}{
		{"hostpath.csi.volplane.io", "", "volplane-provisioner-hostpath.csi.volplane.io"},
		{"hostpath.csi.volplane.io", "node-1", "volplane-provisioner-hostpath.csi.volplane.io--node-1"},
		{"ebs.csi.aws.com", "ip-10-0-0-1.ec2.internal", "volplane-provisioner-ebs.csi.aws.com--ip-10-0-0-1.ec2.internal"},
		// Not a Lease name as they are: mapped, with a hash.
		{"Hostpath.CSI.io", "", ""},
		{"kubernetes.io/aws-ebs", "", ""},
		{"a--b", "c", ""}, // would read as a and node b--c
		{"a", "b--c", ""},
		{long + "." + long + "." + long, long + "." + long, ""}, // too long
		{"hostpath.csi.io", strings.Repeat("n", 253), ""},
	}
	names := map[string]string{}
	for _, c := range cases {
		got := LeaseName(c.provisioner, c.node)
		if c.want != "" && got != c.want {
			t.Errorf("LeaseName(%q, %q) = %q, want %q", c.provisioner, c.node, got, c.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("LeaseName(%q, %q) = %q: %v", c.provisioner, c.node, got, errs)
		}
		if !strings.HasPrefix(got, "volplane-provisioner-") {
			t.Errorf("LeaseName(%q, %q) = %q, want it to say what it is", c.provisioner, c.node, got)
		}
		if other, dup := names[got]; dup {
			t.Errorf("LeaseName(%q, %q) = %q, as for %s", c.provisioner, c.node, got, other)
		}
		names[got] = c.provisioner + " on " + c.node
	}
	if LeaseName("a--b", "c") == LeaseName("a", "b--c") {
		t.Error("two provisioner/node pairs share a Lease")
	}
}

func TestLabelValuesAreValidAndTheDriverNameWhenTheyCanBe(t *testing.T) {
	cases := []struct{ provisioner, want string }{
		{"hostpath.csi.volplane.io", "hostpath.csi.volplane.io"},
		{"Disk.CSI.Example.Com", "Disk.CSI.Example.Com"},
		{"kubernetes.io/aws-ebs", "kubernetes.io-aws-ebs-"}, // prefix: then a hash
		{strings.Repeat("x", 64), strings.Repeat("x", 46) + "-"},
		{"/odd/", "odd-"},
	}
	for _, c := range cases {
		got := LabelValue(c.provisioner)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("LabelValue(%q) = %q: %v", c.provisioner, got, errs)
		}
		if got != c.want && !(strings.HasSuffix(c.want, "-") && strings.HasPrefix(got, c.want) && len(got) == len(c.want)+hashLen) {
			t.Errorf("LabelValue(%q) = %q, want %q", c.provisioner, got, c.want)
		}
	}
	if got := Selector("hostpath.csi.volplane.io"); got != "heartbeat.volplane.io/provisioner=hostpath.csi.volplane.io" {
		t.Errorf("Selector = %q", got)
	}
}

// external-provisioner names its leader election Lease after the driver,
// sanitized by csi-lib-utils.
func TestSidecarLeaseNameIsExternalProvisioners(t *testing.T) {
	cases := []struct{ provisioner, want string }{
		{"hostpath.csi.k8s.io", "hostpath-csi-k8s-io"},
		{"ebs.csi.aws.com", "ebs-csi-aws-com"},
		{"example.com/nfs", "example-com-nfs"},
		{"odd_driver.", "odd-driver-X"},
	}
	for _, c := range cases {
		if got := SidecarLeaseName(c.provisioner); got != c.want {
			t.Errorf("SidecarLeaseName(%q) = %q, want %q", c.provisioner, got, c.want)
		}
	}
}
