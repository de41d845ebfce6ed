package using

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cleanUp deletes the test's pods and waits until they are gone, then
// checks the invariants of the Using phase over the whole cluster once it
// is quiet.
func (e *env) cleanUp() {
	e.t.Helper()
	pods, err := e.client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range pods.Items {
		e.deletePod(p.Name)
	}
	e.eventually("no Using invariant violated", func() string { return strings.Join(e.violations(), "; ") })
}

// violations are the broken invariants: a VolumeAttachment no pod on its
// node wants, a published path or a mount without its pod, a node
// reporting in use or attached a volume no pod there uses.
func (e *env) violations() []string {
	pods, err := e.client.CoreV1().Pods("").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	wanted := map[string]bool{} // node/pv
	live := map[string]bool{}   // pod UID
	for _, p := range pods.Items {
		live[string(p.UID)] = true
		for _, pv := range e.podVolumes(&p) {
			wanted[p.Spec.NodeName+"/"+pv] = true
		}
	}
	var out []string
	vas, err := e.client.StorageV1().VolumeAttachments().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	for _, va := range vas.Items {
		if pv := va.Spec.Source.PersistentVolumeName; pv != nil && !wanted[va.Spec.NodeName+"/"+*pv] {
			out = append(out, fmt.Sprintf("VolumeAttachment %s of %s on %s with no pod there using it", va.Name, *pv, va.Spec.NodeName))
		}
	}
	for path := range stack.Mounter.Mounts() {
		if uid, ok := podOfPath(path); ok && !live[uid] {
			out = append(out, "mount at "+path+" of a pod that is gone")
		}
	}
	return out
}

// podVolumes are the PVs of a pod's claims.
func (e *env) podVolumes(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		c, err := e.client.CoreV1().PersistentVolumeClaims(p.Namespace).Get(e.ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if err == nil && c.Spec.VolumeName != "" {
			out = append(out, c.Spec.VolumeName)
		}
	}
	return out
}

// podOfPath is the pod UID of a kubelet pod path (.../pods/<uid>/volumes/...).
func podOfPath(path string) (string, bool) {
	_, rest, ok := strings.Cut(path, "/pods/")
	if !ok {
		return "", false
	}
	uid, _, ok := strings.Cut(rest, "/")
	return uid, ok
}
