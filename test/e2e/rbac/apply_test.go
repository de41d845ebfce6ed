package rbac

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// apply creates what deploy/ holds, but the workloads: no kubelet runs
// here to start their pods; each role's loops run in this process instead.
func apply(ctx context.Context, c kubernetes.Interface, m *manifests) error {
	create := func(what, name string, err error) error {
		if err != nil {
			return fmt.Errorf("create %s %s: %w", what, name, err)
		}
		return nil
	}
	opts := metav1.CreateOptions{}
	for _, o := range m.namespaces {
		_, err := c.CoreV1().Namespaces().Create(ctx, o, opts)
		if err := create("Namespace", o.Name, err); err != nil {
			return err
		}
	}
	for _, o := range m.serviceAccounts {
		_, err := c.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, opts)
		if err := create("ServiceAccount", o.Name, err); err != nil {
			return err
		}
	}
	for _, o := range m.clusterRoles {
		_, err := c.RbacV1().ClusterRoles().Create(ctx, o, opts)
		if err := create("ClusterRole", o.Name, err); err != nil {
			return err
		}
	}
	for _, o := range m.clusterRoleBindings {
		_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
		if err := create("ClusterRoleBinding", o.Name, err); err != nil {
			return err
		}
	}
	for _, o := range m.roles {
		_, err := c.RbacV1().Roles(o.Namespace).Create(ctx, o, opts)
		if err := create("Role", o.Name, err); err != nil {
			return err
		}
	}
	for _, o := range m.roleBindings {
		_, err := c.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, opts)
		if err := create("RoleBinding", o.Name, err); err != nil {
			return err
		}
	}
	return applyStorage(ctx, c, m)
}

// applyStorage creates deploy/'s CSIDriver, classes and attributes classes.
func applyStorage(ctx context.Context, c kubernetes.Interface, m *manifests) error {
	opts := metav1.CreateOptions{}
	for _, o := range m.csiDrivers {
		if _, err := c.StorageV1().CSIDrivers().Create(ctx, o, opts); err != nil {
			return fmt.Errorf("create CSIDriver %s: %w", o.Name, err)
		}
	}
	for _, o := range m.classes {
		if _, err := c.StorageV1().StorageClasses().Create(ctx, o, opts); err != nil {
			return fmt.Errorf("create StorageClass %s: %w", o.Name, err)
		}
	}
	for _, o := range m.attributeClasses {
		if _, err := c.StorageV1().VolumeAttributesClasses().Create(ctx, o, opts); err != nil {
			return fmt.Errorf("create VolumeAttributesClass %s: %w", o.Name, err)
		}
	}
	return nil
}
