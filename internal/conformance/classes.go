package conformance

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EnsureWaitClass makes name a WaitForFirstConsumer copy of the class
// immediate (same provisioner, parameters, reclaim policy and expansion),
// for a driver registered with an Immediate class only (the bundled
// network driver); one already there is kept.
func EnsureWaitClass(ctx context.Context, client kubernetes.Interface, immediate, name string) error {
	c, err := client.StorageV1().StorageClasses().Get(ctx, immediate, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the class to copy for WaitForFirstConsumer: %w", err)
	}
	wffc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: name},
		Provisioner:          c.Provisioner,
		Parameters:           c.Parameters,
		ReclaimPolicy:        c.ReclaimPolicy,
		AllowVolumeExpansion: c.AllowVolumeExpansion,
		VolumeBindingMode:    new(storagev1.VolumeBindingWaitForFirstConsumer),
	}
	_, err = client.StorageV1().StorageClasses().Create(ctx, wffc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
