package provisioning

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Builders: defaults plus modifiers.

type claimOpt func(*corev1.PersistentVolumeClaim)

// claim is a ReadWriteOnce claim of the class for size bytes, changed by opts.
func (e *env) claim(name, class, size string, opts ...claimOpt) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}}
	c.Spec.StorageClassName = &class
	c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	for _, change := range opts {
		change(c)
	}
	return c
}

func clonedFrom(claim string) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: claim}
	}
}

func accessModes(modes ...corev1.PersistentVolumeAccessMode) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = modes }
}

func (e *env) createClaim(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	out, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{})
	e.noError(err, "create claim "+c.Name)
	return out
}

// createPod creates a pod using the claim, pinned to a node when node is
// not "". No kubelet runs: the pod is at most scheduled.
func (e *env) createPod(name, claim, node string) {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app",
				VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	if node != "" {
		pod.Spec.NodeSelector = map[string]string{topologyKey: node}
	}
	_, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	e.noError(err, "create pod "+name)
}

// Reads.

// getClaim returns the claim, which must exist.
func (e *env) getClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, ok := find(e.t, "claim", e.client.CoreV1().PersistentVolumeClaims(e.ns).Get, name)
	if !ok {
		e.t.Fatalf("claim %s does not exist", name)
	}
	return c
}

// findPV returns the PV, or nil if there is none.
func (e *env) findPV(name string) *corev1.PersistentVolume {
	e.t.Helper()
	pv, _ := find(e.t, "PV", e.client.CoreV1().PersistentVolumes().Get, name)
	return pv
}

// find reads one object through a typed client's Get; ok is false when it
// does not exist, and any other error fails the test.
func find[T any](t testing.TB, kind string, get func(context.Context, string, metav1.GetOptions) (T, error), name string) (obj T, ok bool) {
	t.Helper()
	got, err := get(context.Background(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return obj, false // the zero T: typed clients return an empty object with the error
	case err != nil:
		t.Fatalf("get %s %s: %v", kind, name, err)
	}
	return got, true
}

// ourPVs are the PVs whose claimRef names a claim of the test's namespace.
func (e *env) ourPVs() []corev1.PersistentVolume {
	e.t.Helper()
	list, err := e.client.CoreV1().PersistentVolumes().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("list PVs: %v", err)
	}
	var out []corev1.PersistentVolume
	for _, pv := range list.Items {
		if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == e.ns {
			out = append(out, pv)
		}
	}
	return out
}

// provisionedName is the name of the PV (and of the backend volume) made
// for a claim: deterministic, so a retry finds what a crash left.
func provisionedName(c *corev1.PersistentVolumeClaim) string { return "pvc-" + string(c.UID) }

// noError fails the test if err is set, saying what failed.
func (e *env) noError(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}
