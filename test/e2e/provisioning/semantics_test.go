package provisioning

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
)

// Provisioning semantics of the external-provisioner v6.3.0 that a user
// meets: claims it refuses, claims it leaves to a populator, drivers that
// run out of room, and class secrets.

// createClass creates an Immediate, Delete class of the bundled driver for
// this test only, changed by mods, and deletes it when the test ends.
func (e *env) createClass(name string, mods ...func(*storagev1.StorageClass)) string {
	e.t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: hostpath.DriverName,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate), ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete)}
	for _, m := range mods {
		m(sc)
	}
	_, err := e.client.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{})
	e.noError(err, "create class "+name)
	e.t.Cleanup(func() { _ = e.client.StorageV1().StorageClasses().Delete(e.ctx, name, metav1.DeleteOptions{}) })
	return name
}

func parameters(kv map[string]string) func(*storagev1.StorageClass) {
	return func(sc *storagev1.StorageClass) { sc.Parameters = maps.Clone(kv) }
}

// A claim with a label selector cannot be provisioned: the provisioner
// says so, as the external-provisioner does, and makes nothing.
func TestClaimWithSelectorIsNotProvisioned(t *testing.T) {
	e := newEnv(t)
	e.createClaim(e.claim("picky", classImmediate, "100Mi", func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
	}))
	e.waitClaimEvent("picky", corev1.EventTypeNormal, "Provisioning", "External provisioner is provisioning volume for claim")
	e.waitClaimEvent("picky", corev1.EventTypeWarning, "ProvisioningFailed", "claim Selector is not supported")
	e.holds("claim stays Pending, nothing provisioned", 2*time.Second, e.pendingWithoutVolume("picky"))
}

// A claim whose dataSourceRef names a volume populator is the populator's
// to fill: the provisioner notes that and makes nothing, fails nothing, and
// leaves the node the scheduler selected on the claim.
func TestPopulatorClaimIsLeftToItsPopulator(t *testing.T) {
	e := newEnv(t)
	e.createClaim(e.claim("restored", classWait, "100Mi", func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr.To("backup.example.io"), Kind: "Backup", Name: "nightly"}
	}))
	e.createPod("app", "restored", "")
	e.waitClaimEvent("restored", corev1.EventTypeNormal, "Provisioning", "Assuming an external populator will provision the volume")
	node := e.getClaim("restored").Annotations[annSelectedNode]
	if node == "" {
		t.Fatal("the claim lost its selected node")
	}
	e.holds("claim keeps its node and gets no volume", 2*time.Second, func() string {
		if got := e.getClaim("restored").Annotations[annSelectedNode]; got != node {
			return fmt.Sprintf("selected node %q, was %q", got, node)
		}
		return e.pendingWithoutVolume("restored")()
	})
	e.noClaimEvent("restored", "ProvisioningFailed")
}

// A driver that makes the volume and still answers ResourceExhausted must
// not leak it: the provisioner asks that node again, gets the volume it
// made, and binds the claim to it; no second volume is made elsewhere (the
// invariant checker finds any backend volume without a PV).
func TestOutOfRoomAnswerAfterTheVolumeWasMadeLeaksNothing(t *testing.T) {
	e := newEnv(t)
	class := e.createClass("e2e-exhausted-after-create", parameters(map[string]string{faultParam: faultExhaustedAfterCreate}))
	c, pv := e.waitBound(e.createClaim(e.claim("data", class, "100Mi")).Name)
	vol := e.onlyNewVolume()
	if pv.Spec.CSI.VolumeHandle != vol.id {
		t.Errorf("PV %s names volume %s, the backend holds %s", pv.Name, pv.Spec.CSI.VolumeHandle, vol)
	}
	if nodes := affinityNodes(pv); len(nodes) != 1 || nodes[0] != vol.node {
		t.Errorf("PV accessible from %v, the volume is on %s", nodes, vol.node)
	}
	// The finalizer goes once the PV exists, possibly after the binder's
	// bind (the removal may conflict with it and finish on a later sync).
	e.eventually("claim finalizer "+claimFinalizer+" removed", func() string {
		if c = e.getClaim(c.Name); slices.Contains(c.Finalizers, claimFinalizer) {
			return "claim still holds " + claimFinalizer
		}
		return ""
	})
}

// The same driver, for a claim on a node the scheduler selected: the
// volume made there becomes the claim's, with no rescheduling.
func TestOutOfRoomAnswerAfterTheVolumeWasMadeOnTheSelectedNode(t *testing.T) {
	e := newEnv(t)
	class := e.createClass("e2e-exhausted-after-create-wffc", parameters(map[string]string{faultParam: faultExhaustedAfterCreate}),
		func(sc *storagev1.StorageClass) {
			sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
		})
	e.createClaim(e.claim("data", class, "100Mi"))
	node := bed.drivers[len(bed.drivers)-1].node
	e.createPod("app", "data", node)
	e.waitBound("data")
	if vol := e.onlyNewVolume(); vol.node != node {
		t.Errorf("volume on %s, want on the selected %s", vol.node, node)
	}
	e.noClaimEvent("data", "ProvisioningFailed")
}

// A selected node without room gives the claim back to the scheduler as
// the external-provisioner does for a driver with topology: the driver's
// error as ProvisioningFailed, the selected-node annotation removed, and
// nothing made.
func TestOutOfRoomOnTheSelectedNodeAsksForAnotherNode(t *testing.T) {
	e := newEnv(t)
	e.createClaim(e.claim("huge", classWait, "2Gi"))
	removed := e.watchSelectedNodeRemoved("huge")
	e.createPod("app", "huge", "")
	e.waitClaimEvent("huge", corev1.EventTypeWarning, "ProvisioningFailed", "rpc error: code = ResourceExhausted desc = ")
	select {
	case node := <-removed:
		t.Logf("selected-node %s was removed", node)
	case <-time.After(waitTimeout):
		t.Fatalf("selected-node was never removed; claim annotations %v", e.getClaim("huge").Annotations)
	}
	e.holds("nothing provisioned", time.Second, e.pendingWithoutVolume("huge"))
}

// A class naming secrets: CreateVolume and DeleteVolume get the
// provisioner secret (templated from the claim), the driver never sees the
// reserved keys, and the PV records the other secrets' references.
func TestClassSecretsReachTheDriverAndThePV(t *testing.T) {
	e := newEnv(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "data-creds", Namespace: e.ns}, StringData: map[string]string{"token": "s3cr3t"}}
	_, err := e.client.CoreV1().Secrets(e.ns).Create(e.ctx, secret, metav1.CreateOptions{})
	e.noError(err, "create secret")
	class := e.createClass("e2e-secrets", parameters(map[string]string{
		"csi.storage.k8s.io/provisioner-secret-name":       "${pvc.name}-creds",
		"csi.storage.k8s.io/provisioner-secret-namespace":  "${pvc.namespace}",
		"csi.storage.k8s.io/node-publish-secret-name":      "publish-${pvc.name}",
		"csi.storage.k8s.io/node-publish-secret-namespace": "${pvc.namespace}",
	}))
	c, pv := e.waitBound(e.createClaim(e.claim("data", class, "100Mi")).Name)
	if got, _ := driverCalls.secretsOf("CreateVolume " + pv.Name); fmt.Sprint(got) != "map[token:s3cr3t]" {
		t.Errorf("CreateVolume got secrets %v", got)
	}
	if ref := pv.Spec.CSI.NodePublishSecretRef; ref == nil || ref.Name != "publish-data" || ref.Namespace != e.ns {
		t.Errorf("PV nodePublishSecretRef %v", ref)
	}
	if pv.Spec.CSI.NodeStageSecretRef != nil || pv.Spec.CSI.ControllerPublishSecretRef != nil {
		t.Errorf("PV records secrets the class does not name: %+v", pv.Spec.CSI)
	}
	if a := pv.Annotations; a["volume.kubernetes.io/provisioner-deletion-secret-name"] != "data-creds" ||
		a["volume.kubernetes.io/provisioner-deletion-secret-namespace"] != e.ns {
		t.Errorf("PV deletion secret annotations %v", a)
	}
	e.deleteClaim(c.Name)
	e.waitPVDeleted(pv.Name)
	if got, ok := driverCalls.secretsOf("DeleteVolume " + pv.Spec.CSI.VolumeHandle); !ok || fmt.Sprint(got) != "map[token:s3cr3t]" {
		t.Errorf("DeleteVolume got secrets %v (called: %v)", got, ok)
	}
}

// A provisioner secret that does not exist fails provisioning with the
// external-provisioner's message, and nothing is made.
func TestMissingProvisionerSecretFailsProvisioning(t *testing.T) {
	e := newEnv(t)
	class := e.createClass("e2e-missing-secret", parameters(map[string]string{
		"csi.storage.k8s.io/provisioner-secret-name":      "absent",
		"csi.storage.k8s.io/provisioner-secret-namespace": "${pvc.namespace}",
	}))
	e.createClaim(e.claim("data", class, "100Mi"))
	e.waitClaimEvent("data", corev1.EventTypeWarning, "ProvisioningFailed",
		fmt.Sprintf(`error getting secret absent in namespace %s: secrets "absent" not found`, e.ns))
	e.holds("nothing provisioned", time.Second, e.pendingWithoutVolume("data"))
}
