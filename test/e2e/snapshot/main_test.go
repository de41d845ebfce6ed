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
	"fmt"
	"slices"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

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
	ctx := context.Background()
	c := support.Claim(ns, name, bundle.ImmediateClass, "10Mi")
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "claim bound", stacktest.ClaimPhase(ctx, kube, ns, name, corev1.ClaimBound), alive)
	got, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// snapshotOf creates a VolumeSnapshot of claim, of class (nil: the default).
func snapshotOf(t *testing.T, ns, name, claim string, class *string) *snapv1.VolumeSnapshot {
	t.Helper()
	s := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: snapv1.VolumeSnapshotSpec{VolumeSnapshotClassName: class,
			Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(claim)}}}
	got, err := snaps.SnapshotV1().VolumeSnapshots(ns).Create(context.Background(), s, metav1.CreateOptions{})
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
	var last *snapv1.VolumeSnapshot
	stacktest.Eventually(t, what, func() string {
		s, err := getSnapshot(ns, name)
		if err != nil {
			return err.Error()
		}
		last = s
		return check(s)
	}, alive)
	return last
}

func contentHas(t *testing.T, what, name string, check func(*snapv1.VolumeSnapshotContent) string) *snapv1.VolumeSnapshotContent {
	t.Helper()
	var last *snapv1.VolumeSnapshotContent
	stacktest.Eventually(t, what, func() string {
		c, err := getContent(name)
		if err != nil {
			return err.Error()
		}
		last = c
		return check(c)
	}, alive)
	return last
}

// eventFor waits for an event of reason on the object ns/name whose
// message contains text.
func eventFor(t *testing.T, ns, name, reason, text string) {
	t.Helper()
	stacktest.Eventually(t, "event "+reason+" on "+name, func() string {
		list, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
		if err != nil {
			return err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Reason == reason && strings.Contains(e.Message, text) {
				return ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return fmt.Sprintf("events %q", seen)
	}, alive)
}

func hasFinalizer(fins []string, f string) string {
	if slices.Contains(fins, f) {
		return ""
	}
	return fmt.Sprintf("finalizers %v, want %s", fins, f)
}

func lacksFinalizer(fins []string, f string) string {
	if !slices.Contains(fins, f) {
		return ""
	}
	return fmt.Sprintf("finalizers %v still hold %s", fins, f)
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
