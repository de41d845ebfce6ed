// Package snapshot runs the snapshot loop end to end: everything `volplane
// up` runs (stacktest.Stack, one node) against the embedded, real
// kube-apiserver with the snapshot CRDs and classes of deploy/crd and
// bundle.RegisterSnapshots. Claims of the bundled class volplane-hostpath
// are snapshotted through VolumeSnapshots as a user makes them; the tests
// check the objects, finalizers, annotations, status and events the loop
// writes.
//
// The csi-snapshotter's part (the content's status, the content's
// finalizer once the backend snapshot is deleted) is played by the tests
// (sidecar), so that each step of the snapshot loop is seen alone; the
// snapshotter loop is kept out of this stack.
package snapshot

import (
	"context"
	"slices"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

var (
	stack *stacktest.Stack
	snaps snapclient.Interface
	kube  kubernetes.Interface
)

func TestMain(m *testing.M) {
	support.StackMain(m, 1, "vp-snap-", stacktest.StackConfig{Capacity: 10 << 30, Loops: func(c *manager.Config) {
		// The tests play the sidecar.
		c.Controllers = slices.DeleteFunc(slices.Clone(c.Controllers), func(n string) bool { return n == manager.Snapshotter })
	}}, setUp)
}

func setUp(cp *cluster.ControlPlane, s *stacktest.Stack) error {
	stack, kube = s, cp.Client
	var err error
	snaps, err = snapclient.NewForConfig(cp.RESTConfig)
	return err
}

func alive() error { return stack.EndedEarly() }

// boundClaim makes a claim of the bundled Immediate class and waits for it
// to be Bound.
func boundClaim(t *testing.T, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	return support.BoundClaims(t, kube, alive, support.Claim(ns, name, bundle.ImmediateClass, "10Mi"))[0]
}

// snapshotOf creates a VolumeSnapshot of claim, of class (nil: the default).
func snapshotOf(t *testing.T, ns, name, claim string, class *string) *snapv1.VolumeSnapshot {
	t.Helper()
	got, err := snaps.SnapshotV1().VolumeSnapshots(ns).Create(context.Background(), support.Snapshot(ns, name, claim, class), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func getSnapshot(ns, name string) (*snapv1.VolumeSnapshot, error) {
	return snaps.SnapshotV1().VolumeSnapshots(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func getContent(name string) (*snapv1.VolumeSnapshotContent, error) {
	return snaps.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), name, metav1.GetOptions{})
}

// snapshotHas waits for the snapshot to satisfy check ("" when it does).
func snapshotHas(t *testing.T, what, ns, name string, check func(*snapv1.VolumeSnapshot) string) *snapv1.VolumeSnapshot {
	t.Helper()
	return support.WaitSnapshot(t, snaps, alive, what, ns, name, check)
}

func contentHas(t *testing.T, what, name string, check func(*snapv1.VolumeSnapshotContent) string) *snapv1.VolumeSnapshotContent {
	t.Helper()
	return support.WaitContent(t, snaps, alive, what, name, check)
}

// eventFor waits for an event of reason on the object ns/name whose
// message contains text.
func eventFor(t *testing.T, ns, name, reason, text string) {
	t.Helper()
	support.WaitEvent(t, kube, alive, ns, name, reason, text)
}

// sidecarReports writes the content's status as the csi-snapshotter would.
func sidecarReports(t *testing.T, name string, status snapv1.VolumeSnapshotContentStatus) {
	t.Helper()
	c, err := getContent(name)
	if err != nil {
		t.Fatal(err)
	}
	c.Status = &status
	if _, err := snaps.SnapshotV1().VolumeSnapshotContents().UpdateStatus(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// sidecarReleases removes the content's finalizer as the csi-snapshotter
// does once the backend snapshot is deleted.
func sidecarReleases(t *testing.T, name string) {
	t.Helper()
	stacktest.Eventually(t, "content finalizer removed", func() string {
		c, err := getContent(name)
		if err != nil {
			return err.Error()
		}
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return strings.HasPrefix(f, "snapshot.storage.kubernetes.io/") })
		if _, err := snaps.SnapshotV1().VolumeSnapshotContents().Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
			return err.Error()
		}
		return ""
	}, alive)
}
