package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/heartbeat"
)

// NoSnapshotAPI is what explain and doctor say when the cluster serves no
// snapshot.storage.k8s.io API (its CRDs are not installed).
const NoSnapshotAPI = "snapshot API not installed"

// ErrNoSnapshotAPI is Report's error for a snapshot kind on a cluster
// without the snapshot API.
var ErrNoSnapshotAPI = errors.New(NoSnapshotAPI)

// NotInstalled says err is the API server's answer for a resource it does
// not serve.
func NotInstalled(err error) bool {
	return err != nil && (apierrors.IsNotFound(err) && isListNotFound(err) || meta.IsNoMatchError(err))
}

// isListNotFound: a NotFound without a name is about the resource itself
// (the API server does not serve it), not about an object.
func isListNotFound(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

// Installed is nil when the cluster serves the snapshot API,
// ErrNoSnapshotAPI when it does not (a Get of a resource not served looks
// like a missing object; a List tells them apart).
func Installed(ctx context.Context, snaps snapclient.Interface) error {
	if snaps == nil {
		return ErrNoSnapshotAPI
	}
	_, err := snaps.SnapshotV1().VolumeSnapshotClasses().List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case NotInstalled(err):
		return ErrNoSnapshotAPI
	case err != nil:
		return fmt.Errorf("list volume snapshot classes: %w", err)
	}
	return nil
}

// SnapshotClient is a snapshot clientset that talks to the API server of
// client with its credentials (the same HTTP client, so the same TLS and
// authentication): for callers handed only a kubernetes.Interface. nil
// when client was not made from a rest.Config (a fake).
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
	cfg := &rest.Config{Host: u.Scheme + "://" + u.Host, RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()}
	snaps, err := snapclient.NewForConfigAndClient(cfg, rc.Client)
	if err != nil {
		return nil
	}
	return snaps
}

// ReadSnapshotFacts adds to f every VolumeSnapshot of namespace (every
// namespace for metav1.NamespaceAll), every content and every class;
// ErrNoSnapshotAPI when the cluster does not serve them.
func ReadSnapshotFacts(ctx context.Context, snaps snapclient.Interface, namespace string, f *explain.Facts) error {
	if snaps == nil {
		return ErrNoSnapshotAPI
	}
	api := snaps.SnapshotV1()
	contents, err := api.VolumeSnapshotContents().List(ctx, metav1.ListOptions{})
	if NotInstalled(err) {
		return ErrNoSnapshotAPI
	}
	if err != nil {
		return fmt.Errorf("list volume snapshot contents: %w", err)
	}
	vs, err := api.VolumeSnapshots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list volume snapshots: %w", err)
	}
	classes, err := api.VolumeSnapshotClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list volume snapshot classes: %w", err)
	}
	f.Contents, f.VolumeSnapshots, f.SnapshotClasses = pointers(contents.Items), pointers(vs.Items), pointers(classes.Items)
	return nil
}

// Snapshotters reads whether a snapshotter serves each driver: the
// snapshotter heartbeats and the csi-snapshotter's leader election Lease
// (RoleLeases).
func Snapshotters(ctx context.Context, client kubernetes.Interface, f *explain.Facts, drivers ...string) error {
	f.Snapshotters = map[string]explain.Provisioner{}
	for _, d := range drivers {
		if d == "" {
			continue
		}
		leases, err := RoleLeases(ctx, client.CoordinationV1(), heartbeat.Snapshotter, d)
		if err != nil {
			return err
		}
		f.Snapshotters[d] = explain.SnapshotterPresence(d, leases, f.Now)
	}
	return nil
}

func explainSnapshot(ctx context.Context, c Clients, namespace, name string) (explain.SnapshotReport, error) {
	if c.Snapshots == nil {
		return explain.SnapshotReport{}, ErrNoSnapshotAPI
	}
	if err := Installed(ctx, c.Snapshots); err != nil {
		return explain.SnapshotReport{}, err
	}
	vs, err := c.Snapshots.SnapshotV1().VolumeSnapshots(namespace).Get(ctx, name, metav1.GetOptions{})
	if NotInstalled(err) {
		return explain.SnapshotReport{}, ErrNoSnapshotAPI
	}
	if apierrors.IsNotFound(err) {
		return explain.SnapshotReport{}, fmt.Errorf("volumesnapshot %s/%s not found", namespace, name)
	}
	if err != nil {
		return explain.SnapshotReport{}, fmt.Errorf("read volume snapshot: %w", err)
	}
	f, err := ReadFacts(ctx, c.Kube, namespace)
	if err != nil {
		return explain.SnapshotReport{}, err
	}
	if err := ReadSnapshotFacts(ctx, c.Snapshots, metav1.NamespaceAll, f); err != nil {
		return explain.SnapshotReport{}, err
	}
	if err := Snapshotters(ctx, c.Kube, f, explain.SnapshotDriver(vs, f)); err != nil {
		return explain.SnapshotReport{}, err
	}
	return explain.Snapshot(vs, f), nil
}

func explainContent(ctx context.Context, c Clients, name string) (explain.ContentReport, error) {
	if c.Snapshots == nil {
		return explain.ContentReport{}, ErrNoSnapshotAPI
	}
	if err := Installed(ctx, c.Snapshots); err != nil {
		return explain.ContentReport{}, err
	}
	content, err := c.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, name, metav1.GetOptions{})
	if NotInstalled(err) {
		return explain.ContentReport{}, ErrNoSnapshotAPI
	}
	if apierrors.IsNotFound(err) {
		return explain.ContentReport{}, fmt.Errorf("volumesnapshotcontent %s not found", name)
	}
	if err != nil {
		return explain.ContentReport{}, fmt.Errorf("read volume snapshot content: %w", err)
	}
	f := &explain.Facts{Now: time.Now()}
	if err := ReadSnapshotFacts(ctx, c.Snapshots, metav1.NamespaceAll, f); err != nil {
		return explain.ContentReport{}, err
	}
	if err := Snapshotters(ctx, c.Kube, f, content.Spec.Driver); err != nil {
		return explain.ContentReport{}, err
	}
	return explain.Content(content, f), nil
}

// readRestoreSource reads, as the provisioner does (live GETs), the
// VolumeSnapshot the claim restores from and the content it is bound to,
// into f. Only a snapshot of the claim's own namespace is ever read
// (explain.SnapshotToRead): a dataSourceRef naming another namespace is
// reported as the provisioner refuses it, and nothing of that namespace is
// looked at.
func readRestoreSource(ctx context.Context, snaps snapclient.Interface, claim *v1.PersistentVolumeClaim, f *explain.Facts) error {
	name, ok := explain.SnapshotToRead(claim)
	if !ok {
		return nil
	}
	if snaps == nil {
		f.SnapshotsUnread = "no client of the snapshot API"
		return nil
	}
	api := snaps.SnapshotV1()
	vs, err := api.VolumeSnapshots(claim.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case NotInstalled(err):
		f.SnapshotsUnread = NoSnapshotAPI
		return nil
	case apierrors.IsNotFound(err):
		// A Get of a resource not served looks like a missing object.
		if errors.Is(Installed(ctx, snaps), ErrNoSnapshotAPI) {
			f.SnapshotsUnread = NoSnapshotAPI
		}
		return nil
	case err != nil:
		return fmt.Errorf("read volume snapshot %s/%s: %w", claim.Namespace, name, err)
	}
	f.VolumeSnapshots = append(f.VolumeSnapshots, vs)
	if vs.Status == nil || vs.Status.BoundVolumeSnapshotContentName == nil || *vs.Status.BoundVolumeSnapshotContentName == "" {
		return nil
	}
	content, err := api.VolumeSnapshotContents().Get(ctx, *vs.Status.BoundVolumeSnapshotContentName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read volume snapshot content %s: %w", *vs.Status.BoundVolumeSnapshotContentName, err)
	}
	f.Contents = append(f.Contents, content)
	return nil
}
