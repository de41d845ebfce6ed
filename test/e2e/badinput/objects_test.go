package badinput

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
)

// maker creates the bad input of a case named name; the API server's
// answer is returned.
type maker func(e *env, name string) error

func size(q string) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(q)
	}
}

func classNamed(n string) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To(n) }
}

func modes(m ...corev1.PersistentVolumeAccessMode) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = m }
}

func block(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }

func selector(s *metav1.LabelSelector) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.Selector = s }
}

func expression(key string, op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

// repeated is mode n times over.
func repeated(mode corev1.PersistentVolumeAccessMode, n int) []corev1.PersistentVolumeAccessMode {
	out := make([]corev1.PersistentVolumeAccessMode, n)
	for i := range out {
		out[i] = mode
	}
	return out
}

// claimWith makes a claim named after the case.
func claimWith(opts ...claimOpt) maker {
	return func(e *env, name string) error { return e.createClaim(e.claim(name, opts...)) }
}

// classWith makes a class named after the test's namespace and the case,
// with params and change, then a claim of it named after the case.
func classWith(params map[string]string, change func(*storagev1.StorageClass)) maker {
	return func(e *env, name string) error {
		sc := e.class(name, func(sc *storagev1.StorageClass) {
			sc.Parameters = params
			if change != nil {
				change(sc)
			}
		})
		if err := e.createClass(sc); err != nil {
			return err
		}
		return e.createClaim(e.claim(name, classNamed(sc.Name)))
	}
}

// allowedTopology is a class change allowing only key=values.
func allowedTopology(key string, values ...string) func(*storagev1.StorageClass) {
	return func(sc *storagev1.StorageClass) {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: key, Values: values}}}}
	}
}

// pvName is the name of a case's PV: PVs are cluster-wide.
func (e *env) pvName(name string) string { return e.ns + "-" + name }

// pvWith makes a 1Gi ReadWriteOnce Retain PV of the network driver (whose
// handle no backend holds), of the class "<ns>-static", changed by change.
func pvWith(change func(e *env, pv *corev1.PersistentVolume)) maker {
	return func(e *env, name string) error {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: e.pvName(name)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              e.ns + "-static",
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: hostpath.NetworkDriverName, VolumeHandle: e.pvName(name)}},
			},
		}
		if change != nil {
			change(e, pv)
		}
		_, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{})
		if err == nil {
			e.t.Cleanup(func() {
				_ = e.client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
			})
		}
		return err
	}
}

// both makes a then b.
func both(a, b maker) maker {
	return func(e *env, name string) error {
		if err := a(e, name); err != nil {
			return err
		}
		return b(e, name)
	}
}

// attributesClass makes the VolumeAttributesClass "<ns>-<name>" of driver.
func (e *env) attributesClass(name, driver string, params map[string]string) (string, error) {
	vac := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name}, DriverName: driver, Parameters: params}
	if _, err := e.client.StorageV1().VolumeAttributesClasses().Create(e.ctx, vac, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	e.t.Cleanup(func() {
		_ = e.client.StorageV1().VolumeAttributesClasses().Delete(context.Background(), vac.Name, metav1.DeleteOptions{})
	})
	return vac.Name, nil
}

// pod makes a pod using claim through volumeMounts, or volumeDevices if
// device.
func (e *env) pod(name, claim string, device bool) error {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.37"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	if device {
		p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	} else {
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
	_, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
	return err
}

// request sets the claim's storage request, as a user resizing it would.
// Retried on conflict: the claim is the user's and the controllers' too
// (a write of theirs between the read and the update is not a refusal).
func (e *env) request(claim, q string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := e.getClaim(claim)
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(q)
		_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Update(e.ctx, c, metav1.UpdateOptions{})
		return err
	})
}

// longName is a name of n characters.
func longName(n int) string { return strings.Repeat("a", n-1) + "z" }

func resourceZero() *resource.Quantity { return resource.NewQuantity(0, resource.BinarySI) }
