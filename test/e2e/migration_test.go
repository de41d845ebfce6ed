package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/volplane/volplane/internal/binding"
)

// CSI migration and the deletion finalizers of in-tree PVs, as
// kube-controller-manager 1.36 handles them (pv_controller_base.go:
// updateVolumeMigrationAnnotationsAndFinalizers, setClaimProvisioner).
const (
	annMigratedTo       = "pv.kubernetes.io/migrated-to"
	annProvisionedBy    = "pv.kubernetes.io/provisioned-by"
	pvControllerFinal   = "kubernetes.io/pv-controller"
	externalProvisioner = "external-provisioner.volume.kubernetes.io/finalizer"
)

func pvAWSEBS(volumeID string) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{
			AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: volumeID, FSType: "ext4"},
		}
	}
}

// A claim of a kubernetes.io/aws-ebs class is handed to ebs.csi.aws.com,
// the CSI driver the plugin migrated to: both provisioner annotations name
// the driver, the event says so, and no "no volume plugin matched" failure.
// The claim carries no migrated-to: setClaimProvisioner drops it, as the
// driver's name is not a migrated plugin's.
func TestClaimOfInTreeClassIsHandedToItsCSIDriver(t *testing.T) {
	e := newEnv(t)
	e.createClass(e.class, "kubernetes.io/aws-ebs", storagev1.VolumeBindingImmediate, false)
	e.createClaim(e.claim("data", "1Gi"))
	e.waitClaimEvent("data", v1.EventTypeNormal, binding.EventExternalProvisioning,
		"Waiting for a volume to be created either by the external provisioner 'ebs.csi.aws.com' "+
			"or manually by the system administrator. If volume creation is delayed, please verify that "+
			"the provisioner is running and correctly registered.")
	c := e.waitClaimPhase("data", v1.ClaimPending)
	for _, ann := range []string{annProvisioner, annBetaProvisioner} {
		if c.Annotations[ann] != "ebs.csi.aws.com" {
			t.Errorf("claim annotation %s = %q, want ebs.csi.aws.com", ann, c.Annotations[ann])
		}
	}
	if hasAnnotation(c.ObjectMeta, annMigratedTo) {
		t.Errorf("claim has %s=%q, want none on a claim handed to the CSI driver", annMigratedTo, c.Annotations[annMigratedTo])
	}
	// The binder may see the claim a moment before the class it names (the
	// reference then reports the class not found, and retries): what must
	// never happen is the in-tree name being refused.
	for _, ev := range e.binderEvents("PersistentVolumeClaim", e.ns, "data", binding.EventProvisioningFailed) {
		if strings.Contains(ev.Message, "no volume plugin matched") {
			t.Errorf("in-tree class refused: %s", ev.Message)
		}
	}
}

// A PV provisioned by an in-tree plugin that is not migrated carries the
// kubernetes.io/pv-controller finalizer while its policy is Delete, and
// loses it when the policy becomes Retain (HonorPVReclaimPolicy).
func TestInTreeProvisionedVolumeHasPVControllerFinalizerOnlyUnderDelete(t *testing.T) {
	e := newEnv(t)
	pv := e.createPV(e.pv("data", "1Gi", pvPolicy(v1.PersistentVolumeReclaimDelete),
		pvAnnotation(annProvisionedBy, "kubernetes.io/host-path"), pvFinalizer(externalProvisioner)))
	e.waitFinalizers(pv.Name, "the in-tree finalizer in place of the external one", pvControllerFinal)

	e.updatePV(pv.Name, func(pv *v1.PersistentVolume) {
		pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	})
	e.waitFinalizers(pv.Name, "no deletion finalizer under Retain")
}

// A PV of a migrated plugin (here one made by kubernetes.io/aws-ebs) gets
// migrated-to its CSI driver and loses kubernetes.io/pv-controller, in the
// same write, and keeps the external provisioner's finalizer. Released, it
// is left to that driver's provisioner: no failure, no deletion here.
func TestMigratedVolumeIsMarkedAndLeftToItsCSIDriver(t *testing.T) {
	e := newEnv(t)
	w, err := e.client.CoreV1().PersistentVolumes().Watch(e.ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", e.ns+"-data").String()})
	e.noErr(err, "watch PV")
	defer w.Stop()
	pv := e.createPV(e.pv("data", "1Gi", pvPolicy(v1.PersistentVolumeReclaimDelete), pvAWSEBS("vol-0123456789abcdef0"),
		pvAnnotation(annProvisionedBy, "kubernetes.io/aws-ebs"), pvFinalizer(pvControllerFinal), pvFinalizer(externalProvisioner)))
	e.waitFinalizers(pv.Name, "the in-tree finalizer gone", externalProvisioner)
	if got := e.getPV(pv.Name).Annotations[annMigratedTo]; got != "ebs.csi.aws.com" {
		t.Fatalf("PV %s = %q, want ebs.csi.aws.com", annMigratedTo, got)
	}
	expectNoHalfMigratedVersion(t, w)

	e.createClaim(e.claim("data", "1Gi"))
	e.waitBound("data", pv.Name)
	e.deleteClaim("data")
	e.waitPVPhase(pv.Name, v1.VolumeReleased)
	e.stays("migrated PV stays Released, untouched", 3*time.Second, func() string {
		got := e.getPV(pv.Name)
		if got.Status.Phase != v1.VolumeReleased || got.DeletionTimestamp != nil {
			return fmt.Sprintf("phase %s, deleting %v", got.Status.Phase, got.DeletionTimestamp != nil)
		}
		return ""
	})
	e.noEvents("PersistentVolume", pvEventNamespace, pv.Name, binding.EventVolumeFailedDelete)
}

// expectNoHalfMigratedVersion reads the PV's versions seen so far: none may
// carry migrated-to and the in-tree finalizer together, which one write for
// both guarantees.
func expectNoHalfMigratedVersion(t *testing.T, w watch.Interface) {
	t.Helper()
	for {
		select {
		case ev := <-w.ResultChan():
			pv, ok := ev.Object.(*v1.PersistentVolume)
			if ok && pv.Annotations[annMigratedTo] != "" && slices.Contains(pv.Finalizers, pvControllerFinal) {
				t.Errorf("version %s has migrated-to and %s: two writes", pv.ResourceVersion, pvControllerFinal)
			}
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

// waitFinalizers waits until the PV's finalizers, other than
// pv-protection's, are exactly want.
func (e *env) waitFinalizers(pv, what string, want ...string) {
	e.t.Helper()
	e.eventually("PV "+pv+": "+what, func() string {
		got := slices.DeleteFunc(slices.Clone(e.getPV(pv).Finalizers), func(f string) bool { return f == "kubernetes.io/pv-protection" })
		if !slices.Equal(got, want) {
			return fmt.Sprintf("finalizers %v, want %v", got, want)
		}
		return ""
	})
}

func (e *env) updatePV(name string, change func(*v1.PersistentVolume)) {
	e.t.Helper()
	e.eventually("update PV "+name, func() string {
		pv := e.getPV(name)
		change(pv)
		_, err := e.client.CoreV1().PersistentVolumes().Update(e.ctx, pv, metav1.UpdateOptions{})
		if err != nil {
			return err.Error()
		}
		return ""
	})
}

func (e *env) noErr(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}
