package provisioning

import (
	"reflect"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

const (
	ebsDriver = "ebs.csi.aws.com"
	ebsPlugin = "kubernetes.io/aws-ebs"
	ebsZone   = "topology." + ebsDriver + "/zone"
)

func servesOnly(drivers ...string) func(string) bool {
	return func(d string) bool {
		for _, x := range drivers {
			if d == x {
				return true
			}
		}
		return false
	}
}

func ebsClass(mods ...func(*storagev1.StorageClass)) *storagev1.StorageClass {
	return class(append([]func(*storagev1.StorageClass){func(c *storagev1.StorageClass) {
		c.Provisioner = ebsPlugin
		c.ReclaimPolicy = ptr.To(v1.PersistentVolumeReclaimDelete)
	}}, mods...)...)
}

func handedTo(driver string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.Annotations[volumehelpers.AnnStorageProvisioner] = driver
		c.Annotations[volumehelpers.AnnBetaStorageProvisioner] = driver
	}
}

func TestMigratedFrom(t *testing.T) {
	for _, tc := range []struct {
		name, provisioner, driver, want string
		provisions                      bool
	}{
		{"in-tree plugin migrated to the driver", ebsPlugin, ebsDriver, ebsPlugin, true},
		{"in-tree plugin migrated to another driver", "kubernetes.io/gce-pd", ebsDriver, "", false},
		{"the driver's own class", ebsDriver, ebsDriver, "", true},
		{"a driver no plugin migrated to", testDriver, testDriver, "", true},
		{"an in-tree plugin that is not migrated", "kubernetes.io/host-path", testDriver, "", false},
	} {
		c := class(func(c *storagev1.StorageClass) { c.Provisioner = tc.provisioner })
		if got := migratedFrom(c, tc.driver); got != tc.want {
			t.Errorf("%s: migratedFrom = %q, want %q", tc.name, got, tc.want)
		}
		if got := ProvisionsFor(c, tc.driver); got != tc.provisions {
			t.Errorf("%s: ProvisionsFor = %v, want %v", tc.name, got, tc.provisions)
		}
	}
}

// A claim the binder handed to ebs.csi.aws.com for a kubernetes.io/aws-ebs
// class is provisioned by whoever serves that driver.
func TestClaimOfMigratedClassIsProvisionedByItsDriver(t *testing.T) {
	cases := []struct {
		name   string
		claim  *v1.PersistentVolumeClaim
		class  *storagev1.StorageClass
		serves func(string) bool
		want   ClaimAction
	}{
		{"handed to the driver we serve", claim(handedTo(ebsDriver)), ebsClass(), servesOnly(ebsDriver), ClaimProvision},
		{"the driver is not ours", claim(handedTo(ebsDriver)), ebsClass(), servesOnly(testDriver), ClaimNone},
		{"the class's plugin migrated elsewhere", claim(handedTo(ebsDriver)),
			class(func(c *storagev1.StorageClass) { c.Provisioner = "kubernetes.io/gce-pd" }), servesOnly(ebsDriver), ClaimNone},
	}
	for _, tc := range cases {
		if got := DecideClaim(ClaimFacts{Claim: tc.claim, Class: tc.class, Serves: tc.serves}); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func inTreeEBS(mods ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Finalizers: []string{VolumeFinalizer},
			Annotations: map[string]string{volumehelpers.AnnDynamicallyProvisioned: ebsPlugin}},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource: v1.PersistentVolumeSource{
				AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1", FSType: "xfs"}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeReleased},
	}
	for _, m := range mods {
		m(pv)
	}
	return pv
}

// An in-tree PV made by kubernetes.io/aws-ebs is ebs.csi.aws.com's to
// delete; only its driver's provisioner acts on it.
func TestInTreeVolumeOfMigratedPluginIsItsDriversToDelete(t *testing.T) {
	cases := []struct {
		name   string
		pv     *v1.PersistentVolume
		serves func(string) bool
		want   VolumeAction
	}{
		{"released under Delete", inTreeEBS(), servesOnly(ebsDriver), VolumeDelete},
		{"released under Delete, driver not ours", inTreeEBS(), servesOnly(testDriver), VolumeNone},
		{"Retain with our finalizer", inTreeEBS(func(pv *v1.PersistentVolume) {
			pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
		}), servesOnly(ebsDriver), VolumeUnfinalize},
		{"provisioned-by disagrees with the source", inTreeEBS(func(pv *v1.PersistentVolume) {
			pv.Spec.AWSElasticBlockStore = nil
			pv.Spec.GCEPersistentDisk = &v1.GCEPersistentDiskVolumeSource{PDName: "d"}
		}), servesOnly(ebsDriver, "pd.csi.storage.gke.io"), VolumeNone},
		{"statically provisioned", inTreeEBS(func(pv *v1.PersistentVolume) { pv.Annotations = nil }), servesOnly(ebsDriver), VolumeNone},
	}
	for _, tc := range cases {
		if got := DecideVolume(tc.pv, tc.serves); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// The in-tree class is read as its CSI driver's: fsType becomes the
// provisioner's fstype parameter, zone becomes allowed topology, other
// parameters pass; the lister's class is left as it was.
func TestMigratedClassIsTranslatedForItsDriver(t *testing.T) {
	in := ebsClass(func(c *storagev1.StorageClass) {
		c.Parameters = map[string]string{"fsType": "xfs", "zone": "us-east-1a", "type": "gp3"}
	})
	before := in.DeepCopy()
	out, err := CSIClass(in, ebsDriver)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{paramFSType: "xfs", "type": "gp3"}; !reflect.DeepEqual(out.Parameters, want) {
		t.Errorf("parameters %v, want %v", out.Parameters, want)
	}
	want := []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: ebsZone, Values: []string{"us-east-1a"}}}}}
	if !reflect.DeepEqual(out.AllowedTopologies, want) {
		t.Errorf("allowed topologies %v, want %v", out.AllowedTopologies, want)
	}
	if !reflect.DeepEqual(in, before) {
		t.Error("the class passed in was modified")
	}
	if same, _ := CSIClass(class(), testDriver); same.Provisioner != testDriver || same.Parameters != nil {
		t.Errorf("a CSI class was changed: %+v", same)
	}
	if _, err := CSIClass(ebsClass(func(c *storagev1.StorageClass) {
		c.Parameters = map[string]string{"zone": "us-east-1a"}
		c.AllowedTopologies = want
	}), ebsDriver); err == nil {
		t.Error("zone and allowedTopologies together translated, want the translation's error")
	}
}

// The PV of a migrated class is written in the in-tree form, provisioned
// by the in-tree plugin, with the external provisioner's finalizer; read
// back as CSI it names the driver's volume again.
func TestVolumeOfMigratedClassIsWrittenInTree(t *testing.T) {
	cls, err := CSIClass(ebsClass(func(c *storagev1.StorageClass) { c.Parameters = map[string]string{"fsType": "xfs"} }), ebsDriver)
	if err != nil {
		t.Fatal(err)
	}
	vol := &csipb.Volume{VolumeId: "vol-1", CapacityBytes: 1 << 20,
		AccessibleTopology: []*csipb.Topology{{Segments: map[string]string{ebsZone: "us-east-1a"}}}}
	pv, err := ProvisionedVolume(claim(handedTo(ebsDriver)), cls, ebsDriver, vol, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.CSI != nil || !reflect.DeepEqual(pv.Spec.AWSElasticBlockStore, &v1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1", FSType: "xfs"}) {
		t.Errorf("source %+v, want awsElasticBlockStore vol-1 xfs only", pv.Spec.PersistentVolumeSource)
	}
	if got := pv.Annotations[volumehelpers.AnnDynamicallyProvisioned]; got != ebsPlugin {
		t.Errorf("provisioned-by %q, want %q", got, ebsPlugin)
	}
	if !reflect.DeepEqual(pv.Finalizers, []string{VolumeFinalizer}) {
		t.Errorf("finalizers %v, want [%s]", pv.Finalizers, VolumeFinalizer)
	}
	wantTerm := []v1.NodeSelectorRequirement{
		{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{"us-east-1a"}},
		{Key: v1.LabelTopologyRegion, Operator: v1.NodeSelectorOpIn, Values: []string{"us-east-1"}},
	}
	if got := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions; !reflect.DeepEqual(got, wantTerm) {
		t.Errorf("node affinity %v, want %v", got, wantTerm)
	}
	back, err := AsCSI(pv)
	if err != nil {
		t.Fatal(err)
	}
	if back.Spec.CSI.Driver != ebsDriver || back.Spec.CSI.VolumeHandle != "vol-1" || back.Name != pv.Name {
		t.Errorf("read back as CSI: %s %+v, want %s with handle vol-1", back.Name, back.Spec.CSI, ebsDriver)
	}
	if VolumeDriver(pv, servesOnly(ebsDriver)) != ebsDriver {
		t.Error("the PV written is not recognised as the driver's")
	}
}
