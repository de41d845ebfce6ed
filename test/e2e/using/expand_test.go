package using

import (
	"fmt"
	"strings"
	"testing"

	"github.com/volplane/volplane/test/e2e/support"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/expansion"
)

// The whole stack of `up` grows claims: the expander hands the claim to the
// resizer, the resizer expands the volume through the driver, and where the
// driver needs the node (the network driver, always) the node agent
// finishes the expansion online under the pod, or at the next pod's mount.

// A network claim grown while its pod runs is expanded online: the node
// agent calls NodeExpandVolume under the running pod and finishes the claim.
func TestNetworkClaimGrowsOnlineUnderItsPod(t *testing.T) {
	e := newEnv(t)
	e.claim("data", networkClass, corev1.ReadWriteOnce)
	pv := e.volume("data")
	e.pod("app", "node-1", "data")
	e.waitRunning("app")

	e.grow("data", "2Gi")
	e.eventually("claim data at 2Gi with no resize left", e.grownTo("data", "2Gi"))
	if got := e.volume("data").Spec.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("PV capacity %s, want 2Gi", got.String())
	}
	succeeded := fmt.Sprintf("FileSystemResizeSuccessful: MountVolume.NodeExpandVolume succeeded for volume %q node-1", pv.Name)
	e.eventually("the expansion's events on claim and pod", func() string {
		claim, pod := e.events("data"), e.events("app")
		for _, want := range []string{
			"ExternalExpanding: waiting for an external controller to expand this PVC",
			expansion.EventResizing + ": " + expansion.MessageResizing(pv.Name),
			expansion.EventFileSystemResizeRequired + ": " + expansion.MessageFileSystemResizeRequired,
			succeeded,
		} {
			if !strings.Contains(claim, want) {
				return fmt.Sprintf("claim events %s lack %q", claim, want)
			}
		}
		if !strings.Contains(pod, succeeded) {
			return fmt.Sprintf("pod events %s lack %q", pod, succeeded)
		}
		return ""
	})
	if p := e.getPod("app"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod %s during the expansion", p.Status.Phase)
	}
}

// A network claim grown while no pod uses it waits for a node
// (NodeResizePending, FileSystemResizePending); the next pod's mount
// finishes it before the pod runs.
func TestNetworkClaimGrownWhileUnusedFinishesAtItsNextPod(t *testing.T) {
	e := newEnv(t)
	e.claim("idle", networkClass, corev1.ReadWriteOnce)
	e.volume("idle")

	e.grow("idle", "3Gi")
	e.eventually("claim idle waiting for a node", func() string {
		c := e.getClaim("idle")
		pending := false
		for _, cond := range c.Status.Conditions {
			pending = pending || (cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending && cond.Status == corev1.ConditionTrue)
		}
		if c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimNodeResizePending || !pending {
			return fmt.Sprintf("status %v, conditions %v", c.Status.AllocatedResourceStatuses, c.Status.Conditions)
		}
		if got := c.Status.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("1Gi")) != 0 {
			return "capacity already " + got.String() + " before any node expanded it"
		}
		return ""
	})
	e.pod("app", "node-2", "idle")
	e.waitRunning("app")
	e.eventually("claim idle at 3Gi with no resize left", e.grownTo("idle", "3Gi"))
}

// A node-local claim grows under its running pod through the controller
// alone: the driver needs no node step for a mount volume.
func TestNodeLocalClaimGrowsInUseThroughTheControllerAlone(t *testing.T) {
	e := newEnv(t)
	e.claim("local", localClass, corev1.ReadWriteOnce)
	pv := e.volume("local")
	node := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
	e.pod("app", node, "local")
	e.waitRunning("app")

	e.grow("local", "2Gi")
	e.eventually("claim local at 2Gi with no resize left", e.grownTo("local", "2Gi"))
	e.eventually("VolumeResizeSuccessful on the claim", func() string {
		if ev := e.events("local"); !strings.Contains(ev, expansion.EventResizeSuccessful+": "+expansion.MessageResizeSuccessful) {
			return ev
		}
		return ""
	})
	if ev := e.events("local"); strings.Contains(ev, "FileSystemResize") {
		t.Errorf("a controller-only expansion went to the node: %s", ev)
	}
}

// A claim's VolumeAttributesClass, given at creation and changed later,
// reaches the PV and the claim's status through `up`'s loops.
func TestVolumeAttributesClassSetAtCreationAndChanged(t *testing.T) {
	e := newEnv(t)
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "tiered", Namespace: e.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName:          ptr.To(localClass),
			VolumeAttributesClassName: ptr.To(bundle.StandardAttributes),
			AccessModes:               []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:                 corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("claim tiered at "+bundle.StandardAttributes, e.attributesAre("tiered", bundle.StandardAttributes))

	patch := fmt.Appendf(nil, `{"spec":{"volumeAttributesClassName":%q}}`, bundle.FastAttributes)
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, "tiered", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("claim tiered at "+bundle.FastAttributes, e.attributesAre("tiered", bundle.FastAttributes))
}

// grow raises the claim's request.
func (e *env) grow(claim, size string) {
	e.t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"resources":{"requests":{"storage":%q}}}}`, size)
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, claim, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) getClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// grownTo is done when the claim's capacity is size and nothing of the
// resize is left on it: no resource status, no condition.
func (e *env) grownTo(claim, size string) func() string {
	return func() string {
		c := e.getClaim(claim)
		got := c.Status.Capacity[corev1.ResourceStorage]
		if got.Cmp(resource.MustParse(size)) != 0 || len(c.Status.AllocatedResourceStatuses) != 0 || len(support.ConditionsBesidesUnused(c)) != 0 {
			return fmt.Sprintf("capacity %s, statuses %v, conditions %v; events %s",
				got.String(), c.Status.AllocatedResourceStatuses, c.Status.Conditions, e.events(claim))
		}
		return ""
	}
}

// attributesAre is done when the claim is Bound, reports class as its
// current VolumeAttributesClass with no modification in flight, and its PV
// names the class.
func (e *env) attributesAre(claim, class string) func() string {
	return func() string {
		c := e.getClaim(claim)
		if c.Status.Phase != corev1.ClaimBound || c.Status.CurrentVolumeAttributesClassName == nil ||
			*c.Status.CurrentVolumeAttributesClassName != class || c.Status.ModifyVolumeStatus != nil {
			return fmt.Sprintf("phase %s, current %v, modify %+v; events %s", c.Status.Phase,
				c.Status.CurrentVolumeAttributesClassName, c.Status.ModifyVolumeStatus, e.events(claim))
		}
		pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if pv.Spec.VolumeAttributesClassName == nil || *pv.Spec.VolumeAttributesClassName != class {
			return fmt.Sprintf("PV class %v", pv.Spec.VolumeAttributesClassName)
		}
		return ""
	}
}
