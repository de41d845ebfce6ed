package inline

import (
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// Tenant b writes inline attributes naming tenant a's volume, and a
// publish secret of a's name: the handle is the kubelet's, the driver
// refuses attributes it does not know, and the secret is looked up in b's
// namespace only. a's volume gets no publish from b's pod.
func TestInlineAttributesReachNoOtherTenantsVolumeOrSecret(t *testing.T) {
	a, b := stacktest.Namespace(t), stacktest.Namespace(t)
	client := stack.CP.Client
	if _, err := client.CoreV1().PersistentVolumeClaims(a).Create(ctx, support.Claim(a, "data", bundle.ImmediateClass, "1Mi",
		support.Modes(corev1.ReadWriteOnce)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner, err := client.CoreV1().Pods(a).Create(ctx, support.Pod(a, "owner", node(), "data"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, owner)
	claim, err := client.CoreV1().PersistentVolumeClaims(a).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	victim := pv.Spec.CSI.VolumeHandle
	before := len(callsOf("NodePublishVolume", victim))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "creds"}, StringData: map[string]string{"key": "a's"}}
	if _, err := client.CoreV1().Secrets(a).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	thief := inlinePod(t, b, "thief", hostpath.DriverName, func(s *corev1.CSIVolumeSource) {
		s.VolumeAttributes = map[string]string{"volumeID": victim, "volumeHandle": victim}
	})
	waitEvent(t, thief, `volume attribute "volume`)
	peeker := inlinePod(t, b, "peeker", hostpath.DriverName, func(s *corev1.CSIVolumeSource) {
		s.NodePublishSecretRef = &corev1.LocalObjectReference{Name: "creds"}
	})
	waitEvent(t, peeker, "fetching NodePublishSecretRef "+b+"/creds failed")

	if n := len(callsOf("NodePublishVolume", victim)); n != before {
		t.Errorf("tenant a's volume %s was published %d more times", victim, n-before)
	}
	for _, p := range []*corev1.Pod{thief, peeker} {
		got, err := client.CoreV1().Pods(b).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || got.Status.Phase == corev1.PodRunning {
			t.Errorf("pod %s %v (%v): want it not running", p.Name, got.Status.Phase, err)
		}
		for _, m := range callsOf("NodePublishVolume", kubeletHandle(p, "scratch")) {
			if req := m.(*csipb.NodePublishVolumeRequest); len(req.Secrets) != 0 {
				t.Errorf("pod %s's publish carried secrets %v", p.Name, req.Secrets)
			}
		}
	}
}

// The node agent restarts while the pod is deleted: its record of the
// inline publication is enough to unpublish it, and the driver deletes
// the volume.
func TestInlineVolumeIsDeletedAfterAnAgentRestart(t *testing.T) {
	ns := stacktest.Namespace(t)
	p := inlinePod(t, ns, "app", hostpath.DriverName, nil)
	waitRunning(t, p)
	data := published(t, p)
	if err := stack.StopAgent(); err != nil {
		t.Fatal(err)
	}
	deletePod(t, p)
	if err := stack.StartAgent(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p)
	stacktest.Eventually(t, "inline volume deleted", func() string {
		if _, ok := stack.Mounter.Mounts()[target(p)]; ok {
			return "target still mounted"
		}
		if ok, err := exists(data); ok || err != nil {
			return "data still there"
		}
		return ""
	}, stack.EndedEarly)
}
