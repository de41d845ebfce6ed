package nodeagent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/mounting"
	"github.com/volplane/volplane/internal/stacktest"
)

var ctx = context.Background()

// boundClaim makes a volume on node with the driver's CreateVolume and a
// PV/claim pair bound to each other by hand; it returns the PV.
func boundClaim(t *testing.T, ns, name, node string) *corev1.PersistentVolume {
	t.Helper()
	return boundClaimOf(t, ns, name, bed.drivers[node])
}

// boundClaimOf is boundClaim with the driver given; mods change the claim
// before it is created. The PV is ReadWriteOnce whatever the claim asks:
// the bundled node-local driver serves single-node modes only.
func boundClaimOf(t *testing.T, ns, name string, driver *csi.Endpoint, mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolume {
	t.Helper()
	return boundClaimWithPV(t, ns, name, driver, nil, mods...)
}

// boundClaimWithPV is boundClaimOf with pvMod (if not nil) changing the PV
// before it is created.
func boundClaimWithPV(t *testing.T, ns, name string, driver *csi.Endpoint, pvMod func(*corev1.PersistentVolume), mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolume {
	t.Helper()
	client := bed.cp.Client
	// The volume is made for the access type the PV will ask for: pvMod
	// is tried on an empty PV first to see whether it makes a block one.
	capability := &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	if probe := (&corev1.PersistentVolume{}); pvMod != nil {
		if pvMod(probe); probe.Spec.VolumeMode != nil && *probe.Spec.VolumeMode == corev1.PersistentVolumeBlock {
			capability.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
		}
	}
	vol, err := driver.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: ns + "-" + name,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20}, VolumeCapabilities: []*csipb.VolumeCapability{capability}})
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	size := resource.MustParse("1Mi")
	pvName := "pv-" + ns + "-" + name
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pvName, StorageClassName: new(string),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}}}
	for _, m := range mods {
		m(claim)
	}
	claim, err = client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: size}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name, UID: claim.UID},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: driver.Info.Driver, VolumeHandle: vol.GetVolumeId(), FSType: "ext4"}}}}
	if pvMod != nil {
		pvMod(pv)
	}
	if pv, err = client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().PersistentVolumes().Delete(ctx, pvName, metav1.DeleteOptions{}) })
	pv.Status.Phase = corev1.VolumeBound
	if _, err := client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim.Status.Phase = corev1.ClaimBound
	claim.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pv
}

// runPod creates a pod bound to node (no scheduler needed) using claims.
func runPod(t *testing.T, ns, name, node string, claims ...string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: node,
		Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
	for _, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "vol-" + c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	pod, err := bed.cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func alive() error {
	select {
	case err := <-bed.agent.done:
		return fmt.Errorf("agent ended on its own: %v", err)
	default:
		return nil
	}
}

func waitRunning(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	stacktest.Eventually(t, "pod "+pod.Name+" Running and Ready", func() string {
		p, err := bed.cp.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Status.Phase == corev1.PodRunning {
				return ""
			}
		}
		return fmt.Sprintf("phase %s conditions %v", p.Status.Phase, p.Status.Conditions)
	}, alive)
}

func deletePodAndWaitGone(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if err := bed.cp.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pod)
}

func waitGone(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	stacktest.Eventually(t, "pod "+pod.Name+" gone", func() string {
		_, err := bed.cp.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("still there (%v)", err)
	}, alive)
}

func layout(node string) mounting.Layout {
	return mounting.Layout{Root: mounting.NodeRoot(bed.dir, node)}
}

// mounted says whether the fake kernel has a mount at path.
func mounted(path string) bool {
	_, ok := bed.mounter.Mounts()[path]
	return ok
}

func hasEvent(t *testing.T, ns, pod, reason, text string) string {
	events, err := bed.cp.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var seen []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == pod && e.Reason == reason && strings.Contains(e.Message, text) && e.Source.Component == "kubelet" {
			return ""
		}
		seen = append(seen, e.Reason+": "+e.Message)
	}
	return fmt.Sprintf("no %s event with %q; seen %v", reason, text, seen)
}

func inUse(node string) []corev1.UniqueVolumeName {
	n, err := bed.cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return n.Status.VolumesInUse
}
