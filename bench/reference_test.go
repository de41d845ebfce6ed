package bench

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/cluster"
)

// The reference binds a claim only to an Available PV, and a new PV is
// Pending until the binder's volume worker has seen it: when its claim
// worker looks first, the claim waits for the next resync (15s). So this
// takes either well under a second or about 15s after the binder starts.
func TestReferenceBinderBindsAStaticPair(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), Nodes: 1, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	const ns, class = "ref", "bench-static"
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-0"},
		Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: rwo, StorageClassName: class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/pv-0"}}}}
	if _, err := cp.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c-0", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), AccessModes: rwo,
			Resources: corev1.VolumeResourceRequirements{Requests: size}}}
	if _, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		done <- RunReferenceBinder(runCtx, ReferenceConfig{Kubeconfig: cp.Kubeconfig, QPS: 20, Burst: 30})
	}()

	err = waitFor(ctx, time.Minute, func() (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("reference binder returned early: %v", err)
		default:
		}
		c, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return c.Status.Phase == corev1.ClaimBound && c.Spec.VolumeName == pv.Name, nil
	})
	if err != nil {
		t.Fatalf("claim not bound to %s: %v", pv.Name, err)
	}
	t.Logf("claim %s bound %s after the binder started", claim.Name, time.Since(began).Round(time.Millisecond))
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reference binder: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reference binder did not return within 30s of its context's end")
	}
}
