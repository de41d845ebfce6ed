package attachment

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

func TestNameIsTheReferenceHashOfHandleDriverAndNode(t *testing.T) {
	got := Name("vol-1", "hostpath.csi.volplane.io", "node-1")
	want := fmt.Sprintf("csi-%x", sha256.Sum256([]byte("vol-1hostpath.csi.volplane.ionode-1")))
	if got != want {
		t.Fatalf("Name = %s, want %s", got, want)
	}
	if len(got) != len("csi-")+64 {
		t.Fatalf("Name %s: want csi- and 64 hex digits", got)
	}
}

func TestUniqueVolumeNameIsThePluginSlashDriverCaretHandle(t *testing.T) {
	if got := UniqueVolumeName("ebs.csi.aws.com", "vol-0abc"); got != "kubernetes.io/csi/ebs.csi.aws.com^vol-0abc" {
		t.Fatalf("UniqueVolumeName = %s", got)
	}
}

func TestFinalizerSanitizesTheDriverNameAsTheExternalAttacherDoes(t *testing.T) {
	for driver, want := range map[string]string{
		"ebs.csi.aws.com":          "external-attacher/ebs-csi-aws-com",
		"hostpath.csi.volplane.io": "external-attacher/hostpath-csi-volplane-io",
		"a_b":                      "external-attacher/a-b",
		"driver.":                  "external-attacher/driver-X",
	} {
		if got := Finalizer(driver); got != want {
			t.Errorf("Finalizer(%q) = %s, want %s", driver, got, want)
		}
	}
}
