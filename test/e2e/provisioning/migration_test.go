package provisioning

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// CSI migration end to end: the bundled driver, served under the name of
// the AWS EBS CSI driver, stands in for the driver kubernetes.io/aws-ebs
// migrated to.
const (
	ebsDriver   = "ebs.csi.aws.com"
	ebsPlugin   = "kubernetes.io/aws-ebs"
	annMigrated = "pv.kubernetes.io/migrated-to"
	// The translation of PVs back to the in-tree form needs zones it can
	// read an AWS region from (csi-translation-lib getAwsRegionFromZones):
	// the stand-in reports the EBS zone key, its node ID being the zone.
	ebsZoneKey = "topology." + ebsDriver + "/zone"
	ebsZone    = "us-east-1a"
)

// A claim of a kubernetes.io/aws-ebs class is provisioned by the driver
// serving ebs.csi.aws.com: the class read as that driver's (fsType and zone
// translated), the PV written as an in-tree AWSElasticBlockStore volume
// provisioned by kubernetes.io/aws-ebs, which the binder marks migrated-to
// ebs.csi.aws.com and binds. Deleting the claim deletes the backend volume
// and the PV through the same driver.
func TestClaimOfInTreeClassIsProvisionedAndDeletedByItsMigratedDriver(t *testing.T) {
	e := newEnv(t)
	ebs := serveEBSStandIn(t)
	withoutSharedLoops(t)
	runLoopsWith(t, append(endpoints(), ebs.endpoint))
	class := e.inTreeEBSClass()

	e.createClaim(e.claim("data", class, "100Mi"))
	c, pv := e.waitBound("data")
	vols := e.volumesOf(ebs)
	if len(vols) != 1 {
		t.Fatalf("volumes of %s: %v, want one", ebsDriver, vols)
	}
	e.expectInTreeEBSVolume(pv, vols[0])
	pv = e.waitMigratedTo(pv.Name)
	if slices.Contains(pv.Finalizers, "kubernetes.io/pv-controller") || !slices.Contains(pv.Finalizers, pvFinalizer) {
		t.Errorf("PV finalizers %v, want %s and not kubernetes.io/pv-controller", pv.Finalizers, pvFinalizer)
	}
	for _, ann := range []string{"volume.kubernetes.io/storage-provisioner", "volume.beta.kubernetes.io/storage-provisioner"} {
		if c.Annotations[ann] != ebsDriver {
			t.Errorf("claim %s = %q, want %s", ann, c.Annotations[ann], ebsDriver)
		}
	}
	if _, ok := c.Annotations[annMigrated]; ok {
		t.Errorf("claim carries %s, which a claim handed to the CSI driver does not", annMigrated)
	}
	e.waitClaimEvent("data", corev1.EventTypeNormal, binding.EventExternalProvisioning, binding.MsgExternalProvisioning(ebsDriver))
	e.waitClaimEvent("data", corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume "+pv.Name)
	e.noClaimEvent("data", "ProvisioningFailed")

	e.deleteClaim("data")
	e.waitClaimGone("data")
	e.waitPVDeleted(pv.Name)
	e.eventually("backend volume deleted", func() string {
		if vols := e.volumesOf(ebs); len(vols) > 0 {
			return fmt.Sprintf("still there: %v", vols)
		}
		return ""
	})
}

// expectInTreeEBSVolume checks the PV is the in-tree form of the backend
// volume: the volume ID, the class's fsType, the zone as Kubernetes
// topology, provisioned by the in-tree plugin, pre-bound, under Delete.
func (e *env) expectInTreeEBSVolume(pv *corev1.PersistentVolume, volumeID string) {
	e.t.Helper()
	want := &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: volumeID, FSType: "ext4"}
	if pv.Spec.CSI != nil || pv.Spec.AWSElasticBlockStore == nil || *pv.Spec.AWSElasticBlockStore != *want {
		e.t.Errorf("PV source %+v, want only awsElasticBlockStore %+v", pv.Spec.PersistentVolumeSource, *want)
	}
	if got := pv.Annotations[annProvisionedBy]; got != ebsPlugin {
		e.t.Errorf("PV %s = %q, want %s", annProvisionedBy, got, ebsPlugin)
	}
	if pv.Labels[corev1.LabelTopologyZone] != ebsZone || pv.Labels[corev1.LabelTopologyRegion] != "us-east-1" {
		e.t.Errorf("PV labels %v, want zone %s and region us-east-1", pv.Labels, ebsZone)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		e.t.Errorf("PV policy %s, want Delete", pv.Spec.PersistentVolumeReclaimPolicy)
	}
}

// waitMigratedTo waits until the binder marked the PV migrated-to the driver.
func (e *env) waitMigratedTo(name string) *corev1.PersistentVolume {
	e.t.Helper()
	var pv *corev1.PersistentVolume
	e.eventually("PV "+name+" migrated-to "+ebsDriver, func() string {
		if pv = e.findPV(name); pv == nil || pv.Annotations[annMigrated] != ebsDriver {
			return fmt.Sprintf("PV %v", pv)
		}
		return ""
	})
	return pv
}

// inTreeEBSClass is an Immediate, Delete class of kubernetes.io/aws-ebs
// with in-tree parameters, removed with the test.
func (e *env) inTreeEBSClass() string {
	e.t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: e.ns + "-ebs"},
		Provisioner:       ebsPlugin,
		Parameters:        map[string]string{"fsType": "ext4", "zone": ebsZone, "type": "gp3"},
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	_, err := e.client.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{})
	e.noError(err, "create class")
	e.t.Cleanup(func() {
		_ = e.client.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
	})
	return sc.Name
}

// volumesOf lists the IDs of the volumes a driver holds.
func (e *env) volumesOf(d *nodeDriver) []string {
	e.t.Helper()
	resp, err := d.csi.ListVolumes(e.ctx, &csi.ListVolumesRequest{})
	e.noError(err, "ListVolumes on "+d.node)
	var ids []string
	for _, entry := range resp.GetEntries() {
		ids = append(ids, entry.GetVolume().GetVolumeId())
	}
	return ids
}

// serveEBSStandIn serves the bundled driver as ebs.csi.aws.com in zone
// us-east-1a until the test ends; its volumes are removed with it.
func serveEBSStandIn(t *testing.T) *nodeDriver {
	t.Helper()
	drivers, err := support.NewDrivers("vp-ebs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drivers.Stop)
	endpoint := drivers.Endpoint("csi")
	if _, err := drivers.Serve(hostpath.Config{Endpoint: endpoint, NodeID: ebsZone, Capacity: nodeCapacity,
		DataDir: filepath.Join(drivers.Dir, "data"), Name: ebsDriver, TopologyKey: ebsZoneKey}); err != nil {
		t.Fatal(err)
	}
	conn, err := support.Dial(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &nodeDriver{node: ebsZone, endpoint: endpoint, csi: csi.NewControllerClient(conn)}
}

// runLoopsWith runs the binder and the provisioner, serving these CSI
// endpoints, for the rest of the test.
func runLoopsWith(t *testing.T, csiEndpoints []string) {
	t.Helper()
	l := startLoopsServing(stacktest.ControlPlane(t).RESTConfig, csiEndpoints, provisionerAndBinder...)
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Errorf("loops: %v", err)
		}
	})
}
