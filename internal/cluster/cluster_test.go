package cluster_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/stacktest"
)

func TestMain(m *testing.M) { stacktest.Main(m, 2) }

func TestAPIServerRejectsInvalidClaim(t *testing.T) {
	client, ns := stacktest.ControlPlane(t).Client, stacktest.Namespace(t)
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "no-size"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		},
	}
	_, err := client.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), claim, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("a claim without a storage request must be rejected as invalid, got %v", err)
	}
}

func TestAdmissionAddsProtectionFinalizers(t *testing.T) {
	client, ns := stacktest.ControlPlane(t).Client, stacktest.Namespace(t)
	ctx := context.Background()
	claim, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newClaim("data", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(claim.Finalizers, "kubernetes.io/pvc-protection") {
		t.Errorf("claim finalizers = %v, want kubernetes.io/pvc-protection", claim.Finalizers)
	}
	pv, err := client.CoreV1().PersistentVolumes().Create(ctx, newVolume(ns+"-pv"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteVolume(client, pv.Name) })
	if !slices.Contains(pv.Finalizers, "kubernetes.io/pv-protection") {
		t.Errorf("volume finalizers = %v, want kubernetes.io/pv-protection", pv.Finalizers)
	}
	if pv.Status.Phase != corev1.VolumePending {
		t.Errorf("a new volume is in phase %q, want Pending (set by the API server)", pv.Status.Phase)
	}
}

func TestSimulatedNodesAreReadyAndSchedulable(t *testing.T) {
	cp := stacktest.ControlPlane(t)
	for _, name := range []string{"node-1", "node-2"} {
		node, err := cp.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("simulated node %s: %v", name, err)
		}
		if got := node.Labels[cluster.NodeTopologyKey]; got != name {
			t.Errorf("node %s label %s = %q, want its own name", name, cluster.NodeTopologyKey, got)
		}
		if !nodeReady(node) {
			t.Errorf("node %s is not Ready: %+v", name, node.Status.Conditions)
		}
		for _, taint := range node.Spec.Taints {
			if taint.Key == corev1.TaintNodeNotReady {
				t.Errorf("node %s still carries taint %s", name, taint.Key)
			}
		}
		lease, err := cp.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease of node %s: %v", name, err)
		}
		if age := time.Since(lease.Spec.RenewTime.Time); age > time.Minute {
			t.Errorf("lease of node %s renewed %s ago", name, age)
		}
	}
}

// A Pod using a claim that is bound to a volume without node affinity is
// placed on a simulated node by the real scheduler.
func TestSchedulerPlacesPodWithBoundClaim(t *testing.T) {
	client, ns := stacktest.ControlPlane(t).Client, stacktest.Namespace(t)
	ctx := context.Background()
	pv, claim := bindByHand(t, client, ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "user"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name},
			}}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var nodeName string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		nodeName = p.Spec.NodeName
		return nodeName != "", nil
	})
	if err != nil {
		t.Fatalf("pod using claim bound to %s was not scheduled: %v", pv.Name, err)
	}
	if nodeName != "node-1" && nodeName != "node-2" {
		t.Errorf("pod scheduled to %q, want a simulated node", nodeName)
	}
}

// Namespace deletion needs the namespace controller of the embedded
// kube-controller-manager: it proves that manager runs.
func TestNamespaceDeletionCompletes(t *testing.T) {
	client := stacktest.ControlPlane(t).Client
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gone-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("namespace %s was never removed: %v", ns.Name, err)
	}
}

func TestSecondStartOnSameDataDirFails(t *testing.T) {
	// The shared control plane holds its data dir; find it from the kubeconfig path.
	cp := stacktest.ControlPlane(t)
	dir := filepath.Dir(cp.Kubeconfig)
	_, err := cluster.Start(context.Background(), cluster.Config{DataDir: dir, Nodes: 1})
	if err == nil {
		t.Fatal("a second control plane started on a data dir in use")
	}
	if !errors.Is(err, cluster.ErrDataDirInUse) {
		t.Fatalf("error = %v, want ErrDataDirInUse", err)
	}
}

// bindByHand creates a PV and a claim bound to each other, as the binder
// would, so the scheduler sees a bound claim.
func bindByHand(t *testing.T, client kubernetes.Interface, ns string) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	t.Helper()
	ctx := context.Background()
	claim := newClaim("data", ns+"-pv")
	// The scheduler treats a claim as bound only with both volumeName and
	// this annotation, exactly as the binder leaves it.
	claim.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	claim, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv := newVolume(ns + "-pv")
	pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim.Name, UID: claim.UID}
	pv, err = client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteVolume(client, pv.Name) })
	pv.Status.Phase = corev1.VolumeBound
	if pv, err = client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim.Status = corev1.PersistentVolumeClaimStatus{
		Phase:       corev1.ClaimBound,
		AccessModes: pv.Spec.AccessModes,
		Capacity:    pv.Spec.Capacity,
	}
	if claim, err = client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pv, claim
}

func newClaim(name, volumeName string) *corev1.PersistentVolumeClaim {
	empty := ""
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &empty,
			VolumeName:       volumeName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
		},
	}
}

func newVolume(name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name},
			},
		},
	}
}

// deleteVolume removes a test PV, dropping the pv-protection finalizer that
// no controller removes while the replaced pv-protection loop is off.
func deleteVolume(client kubernetes.Interface, name string) {
	ctx := context.Background()
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	pv.Finalizers = nil
	_, _ = client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
	_ = client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// The in-process clients (heartbeats, node agent, loops) are built from the
// admin config, which asks for no gzip: next to the API server it only
// costs CPU.
func TestInProcessClientsAskForNoCompression(t *testing.T) {
	if cp := stacktest.ControlPlane(t); !cp.RESTConfig.DisableCompression {
		t.Error("the control plane's REST config accepts gzip")
	}
}
