package handoff

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/controller/expander"
	"github.com/volplane/volplane/internal/stacktest"
)

// env is one test's world: a client to arrange and inspect, and the
// expander under test.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string // a fresh namespace: its name prefixes the test's cluster-scoped objects
	loop   *stacktest.LoopRun
}

func newEnv(t *testing.T) *env {
	cp := stacktest.ControlPlane(t)
	return &env{t: t, ctx: context.Background(), client: cp.Client, ns: stacktest.Namespace(t)}
}

// start runs an expander until the test ends (or Stop).
func (e *env) start() *stacktest.LoopRun {
	e.t.Helper()
	e.loop = stacktest.StartLoop(e.t, 0, func(d stacktest.LoopDeps) (interface{ Run(context.Context) error }, error) {
		return expander.New(expander.Config{Client: d.Client, Informers: d.Informers, Recorder: d.Recorder(expander.EventComponent)})
	})
	return e.loop
}

// class makes a StorageClass of provisioner that allows expansion.
func (e *env) class(provisioner string) string {
	e.t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + strings.ReplaceAll(provisioner, "/", "-")},
		Provisioner: provisioner, AllowVolumeExpansion: ptr.To(true)}
	if _, err := e.client.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create class: %v", err)
	}
	e.t.Cleanup(func() { _ = e.client.StorageV1().StorageClasses().Delete(e.ctx, sc.Name, metav1.DeleteOptions{}) })
	return sc.Name
}

var (
	csiSource = corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
		Driver: "hostpath.csi.volplane.io", VolumeHandle: "vol-1"}}
	ebsSource = corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{
		VolumeID: "aws://us-east-1a/vol-0123456789abcdef0", FSType: "ext4"}}
	gceSource = corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{
		PDName: "disk-1", FSType: "ext4"}}
)

// bound makes claim name of class, 1Gi, bound to a PV of its own over src,
// as the binder leaves them: each names the other, both are Bound and the
// claim's capacity is the PV's.
func (e *env) bound(name, class string, src corev1.PersistentVolumeSource) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	size := resource.MustParse("1Gi")
	pvName := e.ns + "-" + name
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: pvName,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}}}
	claim, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, claim, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create claim: %v", err)
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: class,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        src,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: e.ns, Name: name, UID: claim.UID}}}
	if pv, err = e.client.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create PV: %v", err)
	}
	e.t.Cleanup(func() { _ = e.client.CoreV1().PersistentVolumes().Delete(e.ctx, pvName, metav1.DeleteOptions{}) })
	pv.Status.Phase = corev1.VolumeBound
	if _, err := e.client.CoreV1().PersistentVolumes().UpdateStatus(e.ctx, pv, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("PV status: %v", err)
	}
	claim.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
		AccessModes: claim.Spec.AccessModes, Capacity: corev1.ResourceList{corev1.ResourceStorage: size}}
	if claim, err = e.client.CoreV1().PersistentVolumeClaims(e.ns).UpdateStatus(e.ctx, claim, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("claim status: %v", err)
	}
	return claim
}

// grow asks for size, as a user does.
func (e *env) grow(name, size string) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, size)
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, name, types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("grow %s to %s: %v", name, size, err)
	}
}

func (e *env) claim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get claim: %v", err)
	}
	return c
}

// handOffEvents are the events of source volume_expand on claim name, as
// "Type Reason Message" repeated as often as each was counted.
func (e *env) handOffEvents(name string) []string {
	e.t.Helper()
	list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=PersistentVolumeClaim,involvedObject.name=" + name})
	if err != nil {
		e.t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Source.Component != expander.EventComponent {
			continue
		}
		for range max(ev.Count, 1) {
			out = append(out, ev.Type+" "+ev.Reason+" "+ev.Message)
		}
	}
	slices.Sort(out)
	return out
}

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, func() error {
		select {
		case <-e.loop.Ended():
			return fmt.Errorf("the expander ended: %v", e.loop.Err())
		default:
			return nil
		}
	})
}

// waitEvents waits until claim name has exactly want from volume_expand.
func (e *env) waitEvents(name string, want ...string) {
	e.t.Helper()
	slices.Sort(want)
	e.eventually("events of "+name, func() string {
		if got := e.handOffEvents(name); !slices.Equal(got, want) {
			return fmt.Sprintf("events %q, want %q", got, want)
		}
		return ""
	})
}
