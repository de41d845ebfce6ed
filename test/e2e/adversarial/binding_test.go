package adversarial

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/stacktest"
)

func phase(c *corev1.PersistentVolumeClaim) string {
	if c == nil {
		return "gone"
	}
	return string(c.Status.Phase)
}

func volumeNamed(pv string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = pv }
}

// evilPod is the tenant's pod on node (set by hand: no scheduler asked)
// with volumes.
func (w *world) evilPod(name, node string, volumes ...corev1.Volume) {
	w.t.Helper()
	var mounts []corev1.VolumeMount
	for _, v := range volumes {
		mounts = append(mounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Volumes: volumes, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.37", VolumeMounts: mounts}}},
	}
	_, err := tenant.CoreV1().Pods(evilNS).Create(w.ctx, p, metav1.CreateOptions{})
	w.must(err)
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

// podAnswered waits until the tenant's pod runs or has a Warning event
// (of reason, if not ""), and returns that warning.
func (w *world) podAnswered(name, reason string) string {
	w.t.Helper()
	var warning string
	w.eventually("an answer to pod "+evilNS+"/"+name, func() string {
		p, err := w.admin.CoreV1().Pods(evilNS).Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if p.Status.Phase == corev1.PodRunning {
			return ""
		}
		if warning = w.warning(evilNS, p.UID, reason); warning != "" {
			return ""
		}
		return "pod " + name + " is " + string(p.Status.Phase) + ", no event yet"
	})
	return warning
}

// notMounted fails the test if anything of dir is mounted on a node.
func (w *world) notMounted(dir, whose string) {
	w.t.Helper()
	for target, m := range stack.Mounter.Mounts() {
		if src := filepath.Clean(m.Source); src == dir || strings.HasPrefix(src, dir+"/") {
			w.t.Errorf("%s is mounted at %s", whose, target)
		}
	}
}

// (d) A claim that names the victim's Bound PV in spec.volumeName, with or
// without the binder's own annotations (bind-completed,
// bound-by-controller) written by hand, then a pod of the tenant on the
// victim's node using it, then the claim deleted: the victim's PV stays
// bound to the victim, its volume is neither mounted for the tenant nor
// attached, nor reclaimed.
func TestForgedBindingTakesNoOtherVolume(t *testing.T) {
	for _, tc := range []struct {
		name   string
		victim func(*world) victimVolume
		ann    []string
	}{
		{"node-local, bind annotations", func(w *world) victimVolume { return w.data }, []string{annBindCompleted, "yes", annBoundByController, "yes"}},
		{"node-local, bind-completed only", func(w *world) victimVolume { return w.data }, []string{annBindCompleted, "yes"}},
		{"node-local, pre-bound", func(w *world) victimVolume { return w.data }, nil},
		{"network, bind annotations", func(w *world) victimVolume { return w.shared }, []string{annBindCompleted, "yes", annBoundByController, "yes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := begin(t)
			v := tc.victim(w)
			class := localClass
			if v.node == "" {
				class = networkClass
			}
			w.evilClaim("steal", class, volumeNamed(v.pv.Name), annotated(tc.ann...))
			c, warning := w.answered("steal", "", bound)
			t.Logf("claim steal: %v, warning %q", phase(c), warning)
			if c != nil && bound(c) {
				t.Errorf("the tenant's claim is Bound to the victim's PV %s", v.pv.Name)
			}
			node := v.node
			if node == "" {
				node = stack.CP.Nodes[0]
			}
			w.evilPod("thief", node, claimVolume("loot", "steal"))
			t.Logf("pod thief: %q", w.podAnswered("thief", "FailedMount"))
			w.notMounted(v.dir, "the victim's volume "+v.pv.Name)
			w.evilDelete("steal")
			w.verify()
		})
	}
}

// (e) volume.kubernetes.io/storage-resizer naming the other driver on a
// Bound claim, then an expansion: the other driver is not asked to resize
// anything of the victim's.
func TestForgedResizerNamesAnotherDriver(t *testing.T) {
	for _, tc := range []struct{ class, resizer string }{
		{localClass, "network.csi.volplane.io"},
		{networkClass, "hostpath.csi.volplane.io"},
	} {
		t.Run(tc.class, func(t *testing.T) {
			w := begin(t)
			w.evilClaim("grow", tc.class)
			w.eventually("claim grow Bound", func() string {
				if bound(w.claim(evilNS, "grow")) {
					return ""
				}
				return "not Bound"
			})
			w.evilUpdate("grow", func(c *corev1.PersistentVolumeClaim) {
				annotated(annStorageResizer, tc.resizer)(c)
				c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
			})
			// Expanded, or expanded on the backend and waiting for a node
			// to grow the filesystem (a network volume).
			_, warning := w.answered("grow", "", func(c *corev1.PersistentVolumeClaim) bool {
				got := c.Status.Capacity[corev1.ResourceStorage]
				return got.Cmp(resource.MustParse("2Gi")) >= 0 || slices.ContainsFunc(c.Status.Conditions, func(cond corev1.PersistentVolumeClaimCondition) bool {
					return cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending
				})
			})
			t.Logf("claim grow: warning %q", warning)
			w.verify()
		})
	}
}

// (e) volume.kubernetes.io/storage-provisioner naming the other driver on
// a new claim: if the claim is provisioned, by its class's driver.
func TestForgedProvisionerNamesAnotherDriver(t *testing.T) {
	for _, tc := range []struct{ class, driver, forged string }{
		{localClass, "hostpath.csi.volplane.io", "network.csi.volplane.io"},
		{networkClass, "network.csi.volplane.io", "hostpath.csi.volplane.io"},
	} {
		t.Run(tc.class, func(t *testing.T) {
			w := begin(t)
			w.evilClaim("other", tc.class, annotated(annStorageProvisioner, tc.forged))
			c, warning := w.answered("other", "", bound)
			t.Logf("claim other: warning %q", warning)
			if c != nil && bound(c) {
				pv, err := w.admin.CoreV1().PersistentVolumes().Get(w.ctx, c.Spec.VolumeName, metav1.GetOptions{})
				w.must(err)
				if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != tc.driver {
					t.Errorf("claim of class %s provisioned by %+v, not by the class's %s", tc.class, pv.Spec.CSI, tc.driver)
				}
			}
			w.verify()
		})
	}
}

// (d, h) The tenant's claim that names the victim's PV (Lost: not bound
// back) then asks for a larger size and another attributes class: neither
// the resizer nor the modifier may act on the victim's volume. Nothing
// answers a claim that is not Bound, so the victim's PV is watched for a
// while instead.
func TestResizingOrModifyingAClaimThatNamesAnotherVolume(t *testing.T) {
	w := begin(t)
	w.evilClaim("steal", localClass, volumeNamed(w.data.pv.Name), annotated(annBindCompleted, "yes", annBoundByController, "yes"))
	c, warning := w.answered("steal", "", bound)
	t.Logf("claim steal: %s, warning %q", phase(c), warning)
	if c == nil {
		t.Fatal("claim steal is gone")
	}
	// The API server allows these changes on Bound claims only; if it
	// refuses them, that is the answer.
	for {
		c, err := tenant.CoreV1().PersistentVolumeClaims(evilNS).Get(w.ctx, "steal", metav1.GetOptions{})
		w.must(err)
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		c.Spec.VolumeAttributesClassName = ptr.To(bundle.FastAttributes)
		_, err = tenant.CoreV1().PersistentVolumeClaims(evilNS).Update(w.ctx, c, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if apierrors.IsInvalid(err) {
			t.Logf("the API server refuses: %v", err)
			w.verify()
			return
		}
		w.must(err)
		break
	}
	stacktest.Holds(t, "the victim's PV unchanged", 2*time.Second, func() string {
		pv, err := w.admin.CoreV1().PersistentVolumes().Get(w.ctx, w.data.pv.Name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if pv.ResourceVersion != w.data.pv.ResourceVersion {
			return fmt.Sprintf("written: capacity %s, attributes class %v", pv.Spec.Capacity.Storage(), ptr.Deref(pv.Spec.VolumeAttributesClassName, ""))
		}
		return ""
	})
	w.verify()
}
