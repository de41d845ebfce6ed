package binder

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/informerindex"
)

// Every read a sync makes goes through these helpers: the listers first,
// then our newest copies on top (loop.Newest), so a sync never acts on an
// object older than one it wrote. A live read of the API server is made
// only where a cache miss is not proof (liveClaim, liveRecyclerPod).

// volume is the newest copy of a PV; nil, no error, when it does not exist.
func (c *Controller) volume(name string) (*v1.PersistentVolume, error) {
	pv, err := c.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.newPV.Newer(name, pv), nil
}

// claim is the newest copy of a claim; nil, no error, when it does not exist.
func (c *Controller) claim(namespace, name string) (*v1.PersistentVolumeClaim, error) {
	claim, err := c.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.newClaim.Newer(namespace+"/"+name, claim), nil
}

// liveClaim reads a claim from the API server: before a volume is released,
// a cache miss is not proof the claim is gone.
func (c *Controller) liveClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	claim, err := c.client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read claim %s/%s: %w", namespace, name, err)
	}
	return c.newClaim.Newer(namespace+"/"+name, claim), nil
}

func (c *Controller) claimClass(claim *v1.PersistentVolumeClaim) (*storagev1.StorageClass, error) {
	return c.classNamed(binding.ClaimClass(claim))
}

// classNamed reads a class; nil, as for no class, when it does not exist.
func (c *Controller) classNamed(name string) (*storagev1.StorageClass, error) {
	if name == "" {
		return nil, nil
	}
	class, err := c.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return class, err
}

func (c *Controller) defaultClass() (*storagev1.StorageClass, error) {
	classes, err := c.classes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return binding.DefaultClass(classes), nil
}

// podsUsing are the pods that use the claim, in any phase. A sync that
// cannot read them fails and is retried: deciding without them could
// recycle a volume a pod still uses, or name no pod a claim waits for.
func (c *Controller) podsUsing(namespace, claimName string) ([]*v1.Pod, error) {
	pods, err := informerindex.PodsUsing(c.pods, namespace+"/"+claimName)
	if err != nil {
		return nil, fmt.Errorf("pods using claim %s/%s: %w", namespace, claimName, err)
	}
	return pods, nil
}

// recyclerPod is the pod under the recycler's name for the PV, as cached.
func (c *Controller) recyclerPod(pvName string) (*v1.Pod, error) {
	obj, exists, err := c.pods.GetByKey(c.recycleNamespace + "/" + binding.RecyclerPodName(pvName))
	if err != nil || !exists {
		return nil, err
	}
	pod, _ := obj.(*v1.Pod)
	return pod, nil
}

// liveRecyclerPod reads the recycler pod from the API server: right after
// we created it, the cache may not hold it yet.
func (c *Controller) liveRecyclerPod(ctx context.Context, pvName string) (*v1.Pod, error) {
	pod, err := c.client.CoreV1().Pods(c.recycleNamespace).Get(ctx, binding.RecyclerPodName(pvName), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read recycler pod for %s: %w", pvName, err)
	}
	return pod, nil
}
