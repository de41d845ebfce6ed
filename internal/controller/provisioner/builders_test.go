package provisioner

import (
	"hash/fnv"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/provisioning"
)

// Builders with defaults plus modifiers: a Pending RWO claim of 1Mi in
// class "fast", handed to the hostpath driver; an Immediate Delete class.

const (
	testDriver = hostpath.DriverName
	topoKey    = hostpath.TopologyKey
)

func claim(mods ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: types.UID("uid-1"), ResourceVersion: "1",
			Annotations: map[string]string{
				volumehelpers.AnnStorageProvisioner:     testDriver,
				volumehelpers.AnnBetaStorageProvisioner: testDriver,
			}},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To("fast"),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Mi")}},
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func selectedNode(n string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Annotations[volumehelpers.AnnSelectedNode] = n }
}

func withFinalizer(c *v1.PersistentVolumeClaim) {
	c.Finalizers = append(c.Finalizers, provisioning.ClaimFinalizer)
}

func deleting(c *v1.PersistentVolumeClaim) { c.DeletionTimestamp = &metav1.Time{} }

func class(mods ...func(*storagev1.StorageClass)) *storagev1.StorageClass {
	c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: testDriver}
	for _, m := range mods {
		m(c)
	}
	return c
}

func waitForConsumer(c *storagev1.StorageClass) {
	c.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
}

func node(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{topoKey: name}}}
}

// v1csiVolume is a backend volume no driver holds.
var v1csiVolume = csipb.Volume{VolumeId: "no-such-volume"}

func withSelector(c *v1.PersistentVolumeClaim) {
	c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
}

func hasFinalizer(finalizers []string, f string) bool { return slices.Contains(finalizers, f) }

// What the provisioner reads and writes, spelled out as users see it.
const (
	reservedPrefix             = "csi.storage.k8s.io/"
	annDeletionSecretName      = "volume.kubernetes.io/provisioner-deletion-secret-name"
	annDeletionSecretNamespace = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
)

// hashUID is the hash provisioning rotates a claim's preferred segments
// by: a test that wants the preferred node computes it the same way.
func hashUID(uid string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return h.Sum32()
}
