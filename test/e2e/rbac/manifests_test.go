package rbac

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// manifests are the objects of deploy/, as `kubectl apply -k deploy/`
// would send them (kustomize's own build, so the kustomization's resource
// list, namespace and images count).
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

// repoRoot is the repository's top directory (this file is three below).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// loadDeploy builds deploy/ with kustomize and decodes every object; an
// object of a kind this test does not know fails it, so nothing in deploy/
// goes unchecked.
func loadDeploy() (*manifests, error) {
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot(), "deploy"))
	if err != nil {
		return nil, fmt.Errorf("kustomize build deploy/: %w", err)
	}
	m := &manifests{}
	decode := serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer()
	for _, res := range built.Resources() {
		doc, err := res.AsYAML()
		if err != nil {
			return nil, err
		}
		json, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res.CurId(), err)
		}
		obj, _, err := decode.Decode(bytes.TrimSpace(json), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res.CurId(), err)
		}
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
