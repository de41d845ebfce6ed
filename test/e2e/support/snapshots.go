package support

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
)

// The fixtures of the snapshot suites (snapshot, snapshotter,
// groupsnapshot): builders as Claim's, and waits on stacktest.Eventually
// whose alive fails them at once when what the suite runs died.

// Snapshot is a VolumeSnapshot namespace/name of claim, of class (nil: the
// default class of the claim's driver).
func Snapshot(namespace, name, claim string, class *string) *snapv1.VolumeSnapshot {
	return &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: snapv1.VolumeSnapshotSpec{VolumeSnapshotClassName: class,
			Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(claim)}}}
}

// FromSnapshot makes a claim restore from the VolumeSnapshot name of its
// namespace.
func FromSnapshot(name string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: name}
	}
}

// Labels sets a claim's labels.
func Labels(l map[string]string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) { c.Labels = l }
}

// NodeVolume is a 1Mi ReadWriteOnce Retain PV name of the bundled
// node-local driver's volume handle, pinned to node as the provisioner
// pins one, changed by mods.
func NodeVolume(name, handle, node string, mods ...func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: hostpath.DriverName, VolumeHandle: handle}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hostpath.TopologyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}},
		}}
	for _, m := range mods {
		m(pv)
	}
	return pv
}

// BoundClaims creates the claims, waits for each to be Bound and returns
// them as read then.
func BoundClaims(t testing.TB, client kubernetes.Interface, alive func() error, claims ...*corev1.PersistentVolumeClaim) []*corev1.PersistentVolumeClaim {
	t.Helper()
	ctx := context.Background()
	for _, c := range claims {
		if _, err := client.CoreV1().PersistentVolumeClaims(c.Namespace).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create claim %s: %v", c.Name, err)
		}
	}
	var bound []*corev1.PersistentVolumeClaim
	for _, c := range claims {
		stacktest.Eventually(t, "claim "+c.Name+" Bound", stacktest.ClaimPhase(ctx, client, c.Namespace, c.Name, corev1.ClaimBound), alive)
		got, err := client.CoreV1().PersistentVolumeClaims(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bound = append(bound, got)
	}
	return bound
}

// VolumeHandle is the CSI volume handle of the PV the claim
// namespace/name is bound to.
func VolumeHandle(t testing.TB, client kubernetes.Interface, namespace, claim string) string {
	t.Helper()
	ctx := context.Background()
	c, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv.Spec.CSI.VolumeHandle
}

// WaitSnapshot waits until check passes ("" when it does) on the
// VolumeSnapshot namespace/name and returns it as last read.
func WaitSnapshot(t testing.TB, snaps snapclient.Interface, alive func() error, what, namespace, name string,
	check func(*snapv1.VolumeSnapshot) string) *snapv1.VolumeSnapshot {
	t.Helper()
	return waitRead(t, alive, what, func() (*snapv1.VolumeSnapshot, error) {
		return snaps.SnapshotV1().VolumeSnapshots(namespace).Get(context.Background(), name, metav1.GetOptions{})
	}, check)
}

// WaitContent waits until check passes on the VolumeSnapshotContent name
// and returns it as last read.
func WaitContent(t testing.TB, snaps snapclient.Interface, alive func() error, what, name string,
	check func(*snapv1.VolumeSnapshotContent) string) *snapv1.VolumeSnapshotContent {
	t.Helper()
	return waitRead(t, alive, what, func() (*snapv1.VolumeSnapshotContent, error) {
		return snaps.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), name, metav1.GetOptions{})
	}, check)
}

// waitRead waits until check passes on what read returns, and returns
// that as last read.
func waitRead[T any](t testing.TB, alive func() error, what string, read func() (T, error), check func(T) string) T {
	t.Helper()
	var last T
	stacktest.Eventually(t, what, func() string {
		o, err := read()
		if err != nil {
			return err.Error()
		}
		last = o
		return check(o)
	}, alive)
	return last
}

// SnapshotReady is a check: the snapshot's status says readyToUse.
func SnapshotReady(s *snapv1.VolumeSnapshot) string {
	if s.Status == nil || !ptr.Deref(s.Status.ReadyToUse, false) {
		return fmt.Sprintf("status %+v", s.Status)
	}
	return ""
}

// ContentReady is a check: the content's status says readyToUse.
func ContentReady(c *snapv1.VolumeSnapshotContent) string {
	if c.Status == nil || !ptr.Deref(c.Status.ReadyToUse, false) {
		return fmt.Sprintf("status %+v", c.Status)
	}
	return ""
}

// HasFinalizer is a check: fins holds f.
func HasFinalizer(fins []string, f string) string {
	if slices.Contains(fins, f) {
		return ""
	}
	return fmt.Sprintf("finalizers %v, want %s", fins, f)
}

// LacksFinalizer is a check: fins does not hold f.
func LacksFinalizer(fins []string, f string) string {
	if !slices.Contains(fins, f) {
		return ""
	}
	return fmt.Sprintf("finalizers %v still hold %s", fins, f)
}

// ClaimFinalizer is a condition: the claim namespace/name holds f (want)
// or does not (!want).
func ClaimFinalizer(client kubernetes.Interface, namespace, name, f string, want bool) func() string {
	return func() string {
		c, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if want {
			return HasFinalizer(c.Finalizers, f)
		}
		return LacksFinalizer(c.Finalizers, f)
	}
}

// SnapshotAndContentGone is a condition: neither the VolumeSnapshot
// namespace/name nor the content exists.
func SnapshotAndContentGone(snaps snapclient.Interface, namespace, name, content string) func() string {
	return func() string {
		ctx := context.Background()
		_, errS := snaps.SnapshotV1().VolumeSnapshots(namespace).Get(ctx, name, metav1.GetOptions{})
		_, errC := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, content, metav1.GetOptions{})
		if apierrors.IsNotFound(errS) && apierrors.IsNotFound(errC) {
			return ""
		}
		return fmt.Sprintf("snapshot: %v, content: %v", errS, errC)
	}
}

// WaitEvent waits for an event of reason on the object namespace/name
// whose message contains text.
func WaitEvent(t testing.TB, client kubernetes.Interface, alive func() error, namespace, name, reason, text string) {
	t.Helper()
	stacktest.Eventually(t, "event "+reason+" on "+name, func() string {
		list, err := client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{
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
