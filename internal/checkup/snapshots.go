package checkup

import (
	"context"
	"fmt"
	"net/http"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/volplane/volplane/internal/invariants"
)

// NoSnapshotAPI is what explain and doctor say when the cluster serves no
// snapshot.storage.k8s.io API (its CRDs are not installed).
const NoSnapshotAPI = "snapshot API not installed"

// SnapshotObjects are the cluster's VolumeSnapshots, contents and classes.
// Installed is false when the snapshot API is not served (the lists are
// then empty).
type SnapshotObjects struct {
	Installed bool
	Snapshots []snapv1.VolumeSnapshot
	Contents  []snapv1.VolumeSnapshotContent
	Classes   []snapv1.VolumeSnapshotClass
}

// ReadSnapshots lists every VolumeSnapshot (of namespace, every namespace
// for metav1.NamespaceAll), every content and every class.
func ReadSnapshots(ctx context.Context, snaps snapclient.Interface, namespace string) (SnapshotObjects, error) {
	var out SnapshotObjects
	api := snaps.SnapshotV1()
	vs, err := api.VolumeSnapshots(namespace).List(ctx, metav1.ListOptions{})
	if NotInstalled(err) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("list volume snapshots: %w", err)
	}
	contents, err := api.VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, fmt.Errorf("list volume snapshot contents: %w", err)
	}
	classes, err := api.VolumeSnapshotClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, fmt.Errorf("list volume snapshot classes: %w", err)
	}
	return SnapshotObjects{Installed: true, Snapshots: vs.Items, Contents: contents.Items, Classes: classes.Items}, nil
}

// NotInstalled says err is the API server's answer for a resource it does
// not serve.
func NotInstalled(err error) bool {
	return err != nil && (apierrors.IsNotFound(err) || meta.IsNoMatchError(err))
}

// SnapshotClient is a snapshot clientset that talks to the API server of
// client with its credentials (the same HTTP client, so the same TLS and
// authentication): for callers that were handed only a
// kubernetes.Interface. nil when client is not one made from a
// rest.Config (a fake).
func SnapshotClient(client kubernetes.Interface) snapclient.Interface {
	cs, ok := client.(*kubernetes.Clientset)
	if !ok || cs == nil {
		return nil
	}
	rc, ok := cs.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		return nil
	}
	u := rc.Get().URL()
	httpClient := rc.Client
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	cfg := &rest.Config{Host: u.Scheme + "://" + u.Host, RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter(), UserAgent: "volplane-cli"}
	snaps, err := snapclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil
	}
	return snaps
}

// ReadInvariantsWith is ReadInvariants with the snapshot clientset given
// (nil: the snapshot promises are not checked).
func ReadInvariantsWith(ctx context.Context, client kubernetes.Interface, snaps snapclient.Interface, endpoints []string) (invariants.State, error) {
	s, err := readInvariantObjects(ctx, client)
	if err != nil {
		return s, err
	}
	if snaps != nil {
		objs, err := ReadSnapshots(ctx, snaps, metav1.NamespaceAll)
		if err != nil {
			return s, err
		}
		s.Snapshots, s.Contents, s.SnapshotsRead = objs.Snapshots, objs.Contents, true
	}
	listings, err := ListVolumes(ctx, endpoints)
	if err != nil {
		return s, err
	}
	for _, l := range listings {
		s.Backends = append(s.Backends, invariantBackend(l))
	}
	return s, nil
}
