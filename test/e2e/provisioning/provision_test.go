package provisioning

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/hostpath"
)

// A claim of an Immediate class is provisioned at once: one backend volume,
// one PV named after the claim's UID that says where the volume lives and how
// to reclaim it, and the claim Bound to it.
func TestImmediateClaimIsProvisionedAndBound(t *testing.T) {
	e := newEnv(t)
	c, pv, vol := e.provisioned("data", classImmediate)
	e.expectProvisionedPV(pv, c, vol, corev1.PersistentVolumeReclaimDelete)
	if !slices.Equal(pv.Spec.MountOptions, classMountOptions) {
		t.Errorf("PV mountOptions %v, want the class's %v", pv.Spec.MountOptions, classMountOptions)
	}
	if want := resource.MustParse("100Mi"); vol.bytes != want.Value() {
		t.Errorf("backend volume has %d bytes, want the request's %d", vol.bytes, want.Value())
	}
	// The finalizer's removal may conflict with the binder's bind and be
	// finished by the provisioner's next sync, just after the claim is Bound.
	e.eventually("claim finalizer "+claimFinalizer+" removed", func() string {
		if c = e.getClaim("data"); slices.Contains(c.Finalizers, claimFinalizer) {
			return fmt.Sprintf("finalizers %v", c.Finalizers)
		}
		return ""
	})
	e.waitClaimEvent("data", corev1.EventTypeNormal, binding.EventExternalProvisioning,
		binding.MsgExternalProvisioning(hostpath.DriverName))
	e.waitClaimEvent("data", corev1.EventTypeNormal, "Provisioning", "")
	e.waitClaimEvent("data", corev1.EventTypeNormal, "ProvisioningSucceeded",
		"Successfully provisioned volume "+provisionedName(c))
	e.noClaimEvent("data", "ProvisioningFailed")
}

// A claim of a WaitForFirstConsumer class waits, with no volume anywhere,
// until a pod uses it; the volume is then made on the node the scheduler
// chose for the pod (here the only one the pod fits), and the claim binds.
func TestDelayedClaimIsProvisionedOnTheNodeOfItsPod(t *testing.T) {
	e := newEnv(t)
	e.createClaim(e.claim("data", classWait, "100Mi"))
	e.waitClaimEvent("data", corev1.EventTypeNormal, binding.EventWaitForFirstConsumer, binding.MsgWaitForFirstConsumer)
	e.holds("claim waits for a consumer", 2*time.Second, e.pendingWithoutVolume("data"))
	e.noClaimEvent("data", "Provisioning")

	node := bed.drivers[len(bed.drivers)-1].node // not the first endpoint, which a careless provisioner would pick
	e.createPod("app", "data", node)
	c, pv := e.waitBound("data")
	if got := c.Annotations[annSelectedNode]; got != node {
		t.Errorf("claim selected-node %q, want %q (the scheduler's choice)", got, node)
	}
	vol := e.onlyNewVolume()
	if vol.node != node {
		t.Errorf("backend volume on %s, want on %s, the node of the pod", vol.node, node)
	}
	e.expectProvisionedPV(pv, c, vol, corev1.PersistentVolumeReclaimDelete)
	e.waitClaimEvent("data", corev1.EventTypeNormal, "ProvisioningSucceeded",
		"Successfully provisioned volume "+provisionedName(c))
	e.eventually("pod scheduled onto "+node, func() string {
		pod, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, "app", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if pod.Spec.NodeName != node {
			return fmt.Sprintf("pod on %q", pod.Spec.NodeName)
		}
		return ""
	})
}

// provisioned creates a claim of an Immediate class, waits until it is
// Bound to the PV provisioned for it, and returns both with the one backend
// volume made for it.
func (e *env) provisioned(name, class string, opts ...claimOpt) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume, backendVolume) {
	e.t.Helper()
	before := e.newVolumes()
	e.createClaim(e.claim(name, class, "100Mi", opts...))
	c, pv := e.waitBound(name)
	var made []backendVolume
	for _, v := range e.newVolumes() {
		if !slices.Contains(before, v) {
			made = append(made, v)
		}
	}
	if len(made) != 1 {
		e.t.Fatalf("backend volumes made for claim %s: %v, want exactly one", name, made)
	}
	return c, pv, made[0]
}

// expectProvisionedPV checks the PV the provisioner made for claim c on
// backend volume vol: pre-bound to the claim, a CSI source naming the volume,
// node affinity to the volume's node, the class's reclaim policy, our
// provisioned-by annotation, and (with Delete) the finalizer that keeps the
// PV until its backend volume is deleted.
func (e *env) expectProvisionedPV(pv *corev1.PersistentVolume, c *corev1.PersistentVolumeClaim, vol backendVolume, policy corev1.PersistentVolumeReclaimPolicy) {
	e.t.Helper()
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Namespace != c.Namespace || ref.Name != c.Name || ref.UID != c.UID {
		e.t.Errorf("PV claimRef %+v, want claim %s/%s uid %s", ref, c.Namespace, c.Name, c.UID)
	}
	switch src := pv.Spec.CSI; {
	case src == nil:
		e.t.Errorf("PV has no CSI source: %+v", pv.Spec.PersistentVolumeSource)
	case src.Driver != hostpath.DriverName || src.VolumeHandle != vol.id:
		e.t.Errorf("PV CSI source driver %q handle %q, want %q and the backend volume %s", src.Driver, src.VolumeHandle, hostpath.DriverName, vol)
	}
	if got := affinityNodes(pv); !slices.Equal(got, []string{vol.node}) {
		e.t.Errorf("PV node affinity on %s: %v, want [%s], where the volume lives", topologyKey, got, vol.node)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != policy {
		e.t.Errorf("PV reclaim policy %s, want %s", pv.Spec.PersistentVolumeReclaimPolicy, policy)
	}
	if pv.Spec.StorageClassName != *c.Spec.StorageClassName {
		e.t.Errorf("PV class %q, want the claim's %q", pv.Spec.StorageClassName, *c.Spec.StorageClassName)
	}
	if got, want := pv.Spec.Capacity[corev1.ResourceStorage], c.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(want) < 0 {
		e.t.Errorf("PV capacity %s, less than the request %s", got.String(), want.String())
	}
	if !slices.Equal(pv.Spec.AccessModes, c.Spec.AccessModes) {
		e.t.Errorf("PV access modes %v, want the claim's %v", pv.Spec.AccessModes, c.Spec.AccessModes)
	}
	if got := pv.Annotations[annProvisionedBy]; got != hostpath.DriverName {
		e.t.Errorf("PV %s = %q, want %q", annProvisionedBy, got, hostpath.DriverName)
	}
	if want := policy == corev1.PersistentVolumeReclaimDelete; slices.Contains(pv.Finalizers, pvFinalizer) != want {
		e.t.Errorf("PV finalizers %v: %s present = %v, want %v under %s", pv.Finalizers, pvFinalizer, !want, want, policy)
	}
}

// affinityNodes lists the values of the topology key the PV's node affinity
// requires, over all its terms.
func affinityNodes(pv *corev1.PersistentVolume) []string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var out []string
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, req := range term.MatchExpressions {
			if req.Key == topologyKey && req.Operator == corev1.NodeSelectorOpIn {
				out = append(out, req.Values...)
			}
		}
	}
	return out
}
