package capacity

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// OwnerOf is the owner of the objects as the reference's
// --capacity-ownerref-level finds it (pkg/owner Lookup): levels 0 is the
// pod namespace/pod itself, 1 its controller (a DaemonSet's or
// StatefulSet's pod: that set), 2 its controller's controller (a
// Deployment's pod: the Deployment), read from the API server. Only the
// workload kinds of apps/v1 are followed beyond the pod.
func OwnerOf(ctx context.Context, client kubernetes.Interface, namespace, pod string, levels int) (*metav1.OwnerReference, error) {
	p, err := client.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the capacity loop's pod %s/%s: %w", namespace, pod, err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true)}
	meta := p.ObjectMeta
	for level := 0; level < levels; level++ {
		c := metav1.GetControllerOfNoCopy(&meta)
		if c == nil {
			return nil, fmt.Errorf("%s %s/%s has no controlling owner, cannot unwind the ownership further", ref.Kind, namespace, ref.Name)
		}
		ref = metav1.OwnerReference{APIVersion: c.APIVersion, Kind: c.Kind, Name: c.Name, UID: c.UID, Controller: ptr.To(true)}
		if level+1 == levels {
			break
		}
		if meta, err = workload(ctx, client, namespace, ref); err != nil {
			return nil, err
		}
	}
	return &ref, nil
}

// workload reads an apps/v1 owner's metadata.
func workload(ctx context.Context, client kubernetes.Interface, namespace string, ref metav1.OwnerReference) (metav1.ObjectMeta, error) {
	if ref.APIVersion != "apps/v1" {
		return metav1.ObjectMeta{}, fmt.Errorf("owner %s %s of group version %s: only apps/v1 workloads are followed", ref.Kind, ref.Name, ref.APIVersion)
	}
	apps := client.AppsV1()
	var meta metav1.ObjectMeta
	var err error
	switch ref.Kind {
	case "ReplicaSet":
		o, e := apps.ReplicaSets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if e == nil {
			meta = o.ObjectMeta
		}
		err = e
	case "Deployment":
		o, e := apps.Deployments(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if e == nil {
			meta = o.ObjectMeta
		}
		err = e
	case "StatefulSet":
		o, e := apps.StatefulSets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if e == nil {
			meta = o.ObjectMeta
		}
		err = e
	case "DaemonSet":
		o, e := apps.DaemonSets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if e == nil {
			meta = o.ObjectMeta
		}
		err = e
	default:
		return meta, fmt.Errorf("owner %s %s: only ReplicaSets, Deployments, StatefulSets and DaemonSets are followed", ref.Kind, ref.Name)
	}
	if err != nil {
		return meta, fmt.Errorf("read owner %s %s/%s: %w", ref.Kind, namespace, ref.Name, err)
	}
	if meta.UID != ref.UID {
		return meta, fmt.Errorf("owner %s %s/%s is another object than the one named (uid %s, want %s)", ref.Kind, namespace, ref.Name, meta.UID, ref.UID)
	}
	return meta, nil
}
