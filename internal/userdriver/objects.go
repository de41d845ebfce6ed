package userdriver

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// SecretNamespace holds the secrets --driver-secret names.
const SecretNamespace = "kube-system"

// Names are the API objects registered for one driver.
type Names struct {
	// ImmediateClass and WaitClass are its StorageClasses (Immediate and
	// WaitForFirstConsumer, reclaim Delete, expansion allowed).
	ImmediateClass, WaitClass string
	// SnapshotClass and GroupClass are its snapshot classes ("" when it
	// cannot snapshot, or group-snapshot); AttributesClass its
	// VolumeAttributesClass ("" when it cannot modify volumes or
	// --driver-attributes gave it no parameter).
	SnapshotClass, GroupClass, AttributesClass string
}

// Objects are what to register for a driver, from its spec, what its
// controller service reported, and the secrets' data by kind; isDefault
// makes its Immediate class the cluster's default (the bundled drivers do
// not run). Pure.
func Objects(s Spec, ctrl csi.Info, secrets map[SecretKind]map[string]string, isDefault bool) (bundle.Set, Names) {
	n := Names{ImmediateClass: s.Name, WaitClass: s.Name + "-wffc"}
	d := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name},
		Spec: storagev1.CSIDriverSpec{
			// CSI's PUBLISH_UNPUBLISH_VOLUME is what attachRequired
			// means: the attacher calls ControllerPublishVolume.
			AttachRequired:       ptr.To(ctrl.Publish),
			PodInfoOnMount:       ptr.To(s.PodInfoOnMount),
			StorageCapacity:      ptr.To(s.StorageCapacity),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		},
	}
	if s.FSGroupPolicy != "" {
		d.Spec.FSGroupPolicy = ptr.To(storagev1.FSGroupPolicy(s.FSGroupPolicy))
	}
	set := bundle.Set{CSIDrivers: []*storagev1.CSIDriver{d}}
	params := map[string]string{}
	for k, v := range s.Parameters {
		params[k] = v
	}
	for _, kind := range secretKinds {
		data, ok := secrets[kind]
		if !ok {
			continue
		}
		name := s.Name + "-" + string(kind)
		set.Secrets = append(set.Secrets, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: SecretNamespace},
			StringData: data,
		})
		params[kind.parameter()+"-secret-name"] = name
		params[kind.parameter()+"-secret-namespace"] = SecretNamespace
	}
	class := func(name string, mode storagev1.VolumeBindingMode, isDefault bool) *storagev1.StorageClass {
		sc := &storagev1.StorageClass{
			ObjectMeta:           metav1.ObjectMeta{Name: name},
			Provisioner:          s.Name,
			Parameters:           params,
			ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
			VolumeBindingMode:    ptr.To(mode),
			AllowVolumeExpansion: ptr.To(true),
		}
		if isDefault {
			sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		return sc
	}
	set.Classes = []*storagev1.StorageClass{
		class(n.ImmediateClass, storagev1.VolumeBindingImmediate, isDefault),
		class(n.WaitClass, storagev1.VolumeBindingWaitForFirstConsumer, false),
	}
	if ctrl.Snapshot {
		n.SnapshotClass = s.Name + "-snapshots"
		set.SnapshotClasses = []*snapv1.VolumeSnapshotClass{{
			ObjectMeta:     metav1.ObjectMeta{Name: n.SnapshotClass, Annotations: map[string]string{snapshotapi.DefaultClassAnnotation: "true"}},
			Driver:         s.Name,
			DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
		}}
	}
	if ctrl.GroupSnapshot {
		n.GroupClass = s.Name + "-group"
		set.GroupClasses = []*groupv1.VolumeGroupSnapshotClass{{
			ObjectMeta:     metav1.ObjectMeta{Name: n.GroupClass, Annotations: map[string]string{snapshotapi.DefaultGroupClassAnnotation: "true"}},
			Driver:         s.Name,
			DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
		}}
	}
	// A VolumeAttributesClass needs a parameter: which ones a driver
	// takes only its user knows.
	if ctrl.Modify && len(s.Attributes) > 0 {
		n.AttributesClass = s.Name + "-attributes"
		set.AttributeClasses = []*storagev1.VolumeAttributesClass{{
			ObjectMeta: metav1.ObjectMeta{Name: n.AttributesClass},
			DriverName: s.Name,
			Parameters: s.Attributes,
		}}
	}
	return set, n
}

// ReadSecrets reads the spec's secret files: KEY=VALUE lines, as
// `kubectl create secret --from-env-file` takes them (blank lines and
// lines starting with # are skipped).
func ReadSecrets(s Spec) (map[SecretKind]map[string]string, error) {
	out := map[SecretKind]map[string]string{}
	for kind, file := range s.Secrets {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--driver-secret %s:%s: %w", s.Name, kind, err)
		}
		data, err := parseEnvFile(raw)
		if err != nil {
			return nil, fmt.Errorf("--driver-secret %s:%s=%s: %w", s.Name, kind, file, err)
		}
		out[kind] = data
	}
	return out, nil
}

func parseEnvFile(raw []byte) (map[string]string, error) {
	data := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		key, value, ok := strings.Cut(text, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", line)
		}
		data[key] = value
	}
	return data, sc.Err()
}
