package rbac

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/deploy"
)

// manifests are the objects of deploy/ by kind.
type manifests struct {
	namespaces          []*corev1.Namespace
	serviceAccounts     []*corev1.ServiceAccount
	clusterRoles        []*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roles               []*rbacv1.Role
	roleBindings        []*rbacv1.RoleBinding
	deployments         []*appsv1.Deployment
	daemonSets          []*appsv1.DaemonSet
	csiDrivers          []*storagev1.CSIDriver
	classes             []*storagev1.StorageClass
	attributeClasses    []*storagev1.VolumeAttributesClass
}

// loadDeploy decodes deploy/; an object of a kind this test does not
// know fails it, so nothing in deploy/ goes unchecked.
func loadDeploy() (*manifests, error) {
	objs, err := deploy.Objects()
	if err != nil {
		return nil, err
	}
	m := &manifests{}
	for _, obj := range objs {
		if err := m.add(obj); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *manifests) add(obj any) error {
	switch o := obj.(type) {
	case *corev1.Namespace:
		m.namespaces = append(m.namespaces, o)
	case *corev1.ServiceAccount:
		m.serviceAccounts = append(m.serviceAccounts, o)
	case *rbacv1.ClusterRole:
		m.clusterRoles = append(m.clusterRoles, o)
	case *rbacv1.ClusterRoleBinding:
		m.clusterRoleBindings = append(m.clusterRoleBindings, o)
	case *rbacv1.Role:
		m.roles = append(m.roles, o)
	case *rbacv1.RoleBinding:
		m.roleBindings = append(m.roleBindings, o)
	case *appsv1.Deployment:
		m.deployments = append(m.deployments, o)
	case *appsv1.DaemonSet:
		m.daemonSets = append(m.daemonSets, o)
	case *storagev1.CSIDriver:
		m.csiDrivers = append(m.csiDrivers, o)
	case *storagev1.StorageClass:
		m.classes = append(m.classes, o)
	case *storagev1.VolumeAttributesClass:
		m.attributeClasses = append(m.attributeClasses, o)
	default:
		return fmt.Errorf("deploy/ has a %T this test does not check", obj)
	}
	return nil
}
