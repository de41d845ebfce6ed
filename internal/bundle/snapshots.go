package bundle

import (
	"context"
	"errors"
	"fmt"
	"time"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/deploy/crd"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// The snapshot classes registered for the bundled drivers: one default
// VolumeSnapshotClass per driver and a default VolumeGroupSnapshotClass of
// the node-local driver, all with deletionPolicy Delete.
const (
	SnapshotClass        = "volplane-hostpath-snapshots"
	NetworkSnapshotClass = "volplane-network-snapshots"
	GroupSnapshotClass   = "volplane-hostpath-group"
)

// SnapshotClasses are the snapshot classes of the bundled drivers; like
// Objects, RegisterSnapshots creates them only where missing.
func SnapshotClasses() ([]*snapv1.VolumeSnapshotClass, []*groupv1.VolumeGroupSnapshotClass) {
	class := func(name, driver string) *snapv1.VolumeSnapshotClass {
		return &snapv1.VolumeSnapshotClass{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Annotations: map[string]string{snapshotapi.DefaultClassAnnotation: "true"}},
			Driver:         driver,
			DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
		}
	}
	return []*snapv1.VolumeSnapshotClass{class(SnapshotClass, hostpath.DriverName), class(NetworkSnapshotClass, hostpath.NetworkDriverName)},
		[]*groupv1.VolumeGroupSnapshotClass{{
			ObjectMeta:     metav1.ObjectMeta{Name: GroupSnapshotClass, Annotations: map[string]string{snapshotapi.DefaultGroupClassAnnotation: "true"}},
			Driver:         hostpath.DriverName,
			DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
		}}
}

// RegisterSnapshots installs the snapshot API where it is missing
// (InstallSnapshotAPI) and creates the bundled snapshot classes that do not
// exist yet.
func RegisterSnapshots(ctx context.Context, rc *rest.Config) error {
	if err := InstallSnapshotAPI(ctx, rc); err != nil {
		return err
	}
	snaps, err := snapclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	classes, groupClasses := SnapshotClasses()
	return RegisterObjects(ctx, nil, snaps, Set{SnapshotClasses: classes, GroupClasses: groupClasses})
}

// InstallSnapshotAPI installs the snapshot API (deploy/crd) where it is
// missing and waits until the API server serves it. A definition already
// there is left as it is: `volplane controller` tells the operator when it
// is older than the loops need.
func InstallSnapshotAPI(ctx context.Context, rc *rest.Config) error {
	crds, err := crd.Snapshot()
	if err != nil {
		return err
	}
	ext, err := apiextensions.NewForConfig(rc)
	if err != nil {
		return err
	}
	var errs []error
	for _, def := range crds {
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, def, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("install CustomResourceDefinition %s: %w", def.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, def := range crds {
		if err := waitEstablished(ctx, ext, def.Name); err != nil {
			return err
		}
	}
	return nil
}

// waitEstablished waits until the API server serves the definition name.
func waitEstablished(ctx context.Context, ext apiextensions.Interface, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CustomResourceDefinition %s not established: %w", name, err)
	}
	return nil
}
