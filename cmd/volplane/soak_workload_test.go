package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/invariants"
)

// soakNamespace holds every claim and pod of the workload.
const soakNamespace = metav1.NamespaceDefault

// workload makes claims, static PVs, pods and expansions, and remembers
// what the invariant checker must know: the Retain volumes it made and the
// claims it deleted.
type workload struct {
	client  kubernetes.Interface
	network string // the network driver's controller socket
	// maxClaims bounds the live claims, so the run reaches a steady state.
	maxClaims int
	next      atomic.Int64

	mu       sync.Mutex
	ops      map[string]int // done, by kind
	failed   int            // operations the API or the driver refused (the API server may be down)
	retained []invariants.Volume
	deleted  []invariants.DeletedClaim
	// lastErr is the last failure, for the summary.
	lastErr string

	// snaps, if set, adds the snapshot operations (soak_snapshots_test.go),
	// which run one at a time (snapMu); deletedSnapshots are the
	// VolumeSnapshots they deleted.
	snaps            snapclient.Interface
	snapMu           sync.Mutex
	deletedSnapshots []invariants.DeletedSnapshot
}

func newWorkload(client kubernetes.Interface, network string, maxClaims int) *workload {
	return &workload{client: client, network: network, maxClaims: maxClaims, ops: map[string]int{}}
}

// errNothingToDo marks an operation drawn where it does not apply (a pod
// for a claim that has one, an expansion of a claim not Bound): not counted.
var errNothingToDo = errors.New("nothing to do")

func (w *workload) done(kind string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, errNothingToDo) {
		return
	}
	if err != nil {
		w.failed++
		w.lastErr = kind + ": " + err.Error()
		return
	}
	w.ops[kind]++
}

// summary is the operations done by kind, in name order.
func (w *workload) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	kinds := make([]string, 0, len(w.ops))
	total := 0
	for k, n := range w.ops {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	sort.Strings(kinds)
	return fmt.Sprintf("%d (%s; %d refused)", total, strings.Join(kinds, " "), w.failed)
}

func (w *workload) expect() invariants.Expect {
	w.mu.Lock()
	defer w.mu.Unlock()
	return invariants.Expect{Retained: append([]invariants.Volume(nil), w.retained...), Deleted: append([]invariants.DeletedClaim(nil), w.deleted...),
		DeletedSnapshots: append([]invariants.DeletedSnapshot(nil), w.deletedSnapshots...)}
}

// step does one operation drawn from rng.
func (w *workload) step(ctx context.Context, rng *rand.Rand) {
	claims, err := w.client.CoreV1().PersistentVolumeClaims(soakNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.done("list", err)
		return
	}
	live := liveClaims(claims.Items)
	if w.snaps != nil && rng.IntN(100) < 30 {
		w.snapshotStep(ctx, rng, live)
		return
	}
	switch r := rng.IntN(100); {
	case r < 30 && len(live) < w.maxClaims:
		kinds := append(append([]string(nil), soakDynamicClasses...), staticRetainClass, staticDeleteClass)
		class := kinds[rng.IntN(len(kinds))]
		w.done("create-claim", w.createClaim(ctx, class))
	case r < 45 && len(live) > 0:
		w.done("delete-claim", w.deleteClaim(ctx, live[rng.IntN(len(live))]))
	case r < 70 && len(live) > 0:
		w.done("create-pod", w.createPod(ctx, live[rng.IntN(len(live))]))
	case r < 85:
		w.done("delete-pod", w.deleteRandomPod(ctx, rng))
	case r < 90:
		w.done("delete-retained-pv", w.deleteRetainedPV(ctx, rng))
	case len(live) > 0:
		w.done("expand", w.expand(ctx, live[rng.IntN(len(live))]))
	}
}

// liveClaims are the claims not being deleted.
func liveClaims(all []corev1.PersistentVolumeClaim) []corev1.PersistentVolumeClaim {
	var out []corev1.PersistentVolumeClaim
	for _, c := range all {
		if c.DeletionTimestamp == nil {
			out = append(out, c)
		}
	}
	return out
}

var gi = resource.MustParse("1Gi")

// createClaim makes a claim of class; for a static class it first makes
// the backend volume (on the network driver, as an admin would) and its PV.
func (w *workload) createClaim(ctx context.Context, class string) error {
	n := w.next.Add(1)
	name := fmt.Sprintf("c%d", n)
	if class == staticRetainClass || class == staticDeleteClass {
		if err := w.createStaticPV(ctx, fmt.Sprintf("static-%d", n), class); err != nil {
			return err
		}
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"soak-class": class}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: gi}},
		},
	}
	_, err := w.client.CoreV1().PersistentVolumeClaims(soakNamespace).Create(ctx, claim, metav1.CreateOptions{})
	return err
}

// createStaticPV makes a network volume through CSI, retrying through
// injected faults (CreateVolume is idempotent by name), and a PV for it.
// A Delete PV carries provisioned-by, as an admin who wants the
// provisioner to delete it sets.
func (w *workload) createStaticPV(ctx context.Context, name, class string) error {
	vol, err := w.createBackendVolume(ctx, name)
	if err != nil {
		return err
	}
	policy := corev1.PersistentVolumeReclaimRetain
	annotations := map[string]string{}
	if class == staticDeleteClass {
		policy = corev1.PersistentVolumeReclaimDelete
		annotations[volumehelpers.AnnDynamicallyProvisioned] = hostpath.NetworkDriverName
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: gi},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: policy,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: hostpath.NetworkDriverName, VolumeHandle: vol.GetVolumeId(), VolumeAttributes: vol.GetVolumeContext(),
			}},
		},
	}
	if policy == corev1.PersistentVolumeReclaimRetain {
		w.mu.Lock()
		w.retained = append(w.retained, invariants.Volume{Driver: hostpath.NetworkDriverName, Handle: vol.GetVolumeId()})
		w.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	for {
		_, err := w.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) || ctx.Err() != nil {
			return err
		}
		// The volume exists: its PV must too, or it is an orphan the
		// test itself made. Retry until the API server answers.
		time.Sleep(time.Second)
	}
}

func (w *workload) createBackendVolume(ctx context.Context, name string) (*csi.Volume, error) {
	conn, err := grpc.NewClient(w.network, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	req := &csi.CreateVolumeRequest{
		Name:          name,
		CapacityRange: &csi.CapacityRange{RequiredBytes: gi.Value()},
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		}},
	}
	// Until it is made: a volume made by a call reported as failed would
	// otherwise be the test's own orphan. The drivers are down while the
	// cluster child restarts, so this may take a while.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	for {
		resp, err := csi.NewControllerClient(conn).CreateVolume(ctx, req)
		if err == nil {
			return resp.GetVolume(), nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("static volume %s: %w", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deleteClaim deletes the claim's pods and the claim, and remembers what
// the claim was bound to.
func (w *workload) deleteClaim(ctx context.Context, claim corev1.PersistentVolumeClaim) error {
	if err := w.deletePodsOf(ctx, claim.Name); err != nil {
		return err
	}
	d := invariants.DeletedClaim{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID}
	if current, err := w.client.CoreV1().PersistentVolumeClaims(soakNamespace).Get(ctx, claim.Name, metav1.GetOptions{}); err == nil {
		claim = *current
	}
	if claim.Spec.VolumeName != "" {
		if pv, err := w.client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{}); err == nil && pv.Spec.CSI != nil {
			d.PV, d.Policy = pv.Name, pv.Spec.PersistentVolumeReclaimPolicy
			d.Volume = invariants.Volume{Driver: pv.Spec.CSI.Driver, Handle: pv.Spec.CSI.VolumeHandle}
		}
	}
	uid := claim.UID
	err := w.client.CoreV1().PersistentVolumeClaims(soakNamespace).Delete(ctx, claim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err == nil {
		w.mu.Lock()
		w.deleted = append(w.deleted, d)
		w.mu.Unlock()
	}
	return err
}

// podLabel names the claim a pod uses.
const podLabel = "soak-claim"

func (w *workload) deletePodsOf(ctx context.Context, claim string) error {
	return w.client.CoreV1().Pods(soakNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: podLabel + "=" + claim})
}

// createPod starts a pod using claim, unless one already does.
func (w *workload) createPod(ctx context.Context, claim corev1.PersistentVolumeClaim) error {
	pods, err := w.client.CoreV1().Pods(soakNamespace).List(ctx, metav1.ListOptions{LabelSelector: podLabel + "=" + claim.Name})
	if err != nil {
		return err
	}
	if len(pods.Items) > 0 {
		return errNothingToDo
	}
	pod := soakPod(fmt.Sprintf("p%d-%s", w.next.Add(1), claim.Name), claim.Name)
	_, err = w.client.CoreV1().Pods(soakNamespace).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

func soakPod(name, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{podLabel: claim}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.37", Command: []string{"sleep", "infinity"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

func (w *workload) deleteRandomPod(ctx context.Context, rng *rand.Rand) error {
	pods, err := w.client.CoreV1().Pods(soakNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return errNothingToDo
	}
	pod := pods.Items[rng.IntN(len(pods.Items))]
	return w.client.CoreV1().Pods(soakNamespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
}

// maxGrowth bounds how far a claim is grown, in GiB.
const maxGrowth = 4

// expand grows a Bound claim of a class that allows it by 1Gi.
func (w *workload) expand(ctx context.Context, claim corev1.PersistentVolumeClaim) error {
	class := claim.Spec.StorageClassName
	if claim.Status.Phase != corev1.ClaimBound || class == nil || *class == staticRetainClass || *class == staticDeleteClass {
		return errNothingToDo
	}
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.Cmp(resource.MustParse(fmt.Sprintf("%dGi", maxGrowth))) >= 0 {
		return errNothingToDo
	}
	size.Add(gi)
	patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, size.String())
	_, err := w.client.CoreV1().PersistentVolumeClaims(soakNamespace).Patch(ctx, claim.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// deleteRetainedPV is an admin cleaning up a Released static Retain PV:
// the PV first, then its backend volume, which the test then no longer
// expects to be kept. Once begun it runs to the end, even past the chaos
// phase, or the test would leave an orphan of its own.
func (w *workload) deleteRetainedPV(ctx context.Context, rng *rand.Rand) error {
	pvs, err := w.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var released []corev1.PersistentVolume
	for _, pv := range pvs.Items {
		if pv.Spec.StorageClassName == staticRetainClass && pv.Status.Phase == corev1.VolumeReleased && pv.DeletionTimestamp == nil {
			released = append(released, pv)
		}
	}
	if len(released) == 0 {
		return errNothingToDo
	}
	pv := released[rng.IntN(len(released))]
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	uid := pv.UID
	for {
		err := w.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("PV %s: %w", pv.Name, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	handle := invariants.Volume{Driver: hostpath.NetworkDriverName, Handle: pv.Spec.CSI.VolumeHandle}
	w.mu.Lock()
	w.retained = slices.DeleteFunc(w.retained, func(v invariants.Volume) bool { return v == handle })
	w.mu.Unlock()
	return w.deleteBackendVolume(ctx, handle.Handle)
}

// deleteBackendVolume deletes a network volume through CSI, retrying
// through injected faults and restarts until it is gone.
func (w *workload) deleteBackendVolume(ctx context.Context, id string) error {
	conn, err := grpc.NewClient(w.network, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		_, err := csi.NewControllerClient(conn).DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
		if err == nil || status.Code(err) == codes.NotFound {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("backend volume %s: %w", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
