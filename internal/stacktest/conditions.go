package stacktest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Conditions for Eventually: each returns "" once its object is in the
// state named, else what it is.

// ClaimPhase: the claim namespace/name is in phase.
func ClaimPhase(ctx context.Context, client kubernetes.Interface, namespace, name string, phase corev1.PersistentVolumeClaimPhase) func() string {
	return func() string {
		c, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if c.Status.Phase != phase {
			return fmt.Sprintf("claim %s is %s", name, c.Status.Phase)
		}
		return ""
	}
}

// VolumePhase: the volume name is in phase.
func VolumePhase(ctx context.Context, client kubernetes.Interface, name string, phase corev1.PersistentVolumePhase) func() string {
	return func() string {
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if pv.Status.Phase != phase {
			return fmt.Sprintf("volume %s is %s", name, pv.Status.Phase)
		}
		return ""
	}
}

// PodRunning: the pod namespace/name is Running.
func PodRunning(ctx context.Context, client kubernetes.Interface, namespace, name string) func() string {
	return func() string {
		p, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if p.Status.Phase != corev1.PodRunning {
			return "pod " + name + " is " + string(p.Status.Phase)
		}
		return ""
	}
}
