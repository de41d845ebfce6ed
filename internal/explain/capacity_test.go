package explain_test

import (
	"bytes"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
)

// capacityFacts: three nodes, a WaitForFirstConsumer class of a driver
// that tracks capacity (storageCapacity: trackCapacity), 100Gi published
// on node-1 and node-2, nothing on node-3, and a pod waiting for the claim.
func capacityFacts(trackCapacity bool) *explain.Facts {
	const key = "topology.volplane.io/node"
	f := &explain.Facts{Now: now,
		Classes: []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "local.csi",
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}},
		Drivers: []*storagev1.CSIDriver{{ObjectMeta: metav1.ObjectMeta{Name: "local.csi"},
			Spec: storagev1.CSIDriverSpec{StorageCapacity: ptr.To(trackCapacity)}}},
		Pods: []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "huge-pod", Namespace: "ns"}, Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "d",
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "huge"}}}}}}},
	}
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		f.Nodes = append(f.Nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{key: n}}})
	}
	for _, n := range []string{"node-1", "node-2"} {
		f.Capacities = append(f.Capacities, &storagev1.CSIStorageCapacity{
			ObjectMeta:       metav1.ObjectMeta{Name: "csisc-" + n, Namespace: "kube-system"},
			StorageClassName: "local", NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{key: n}},
			Capacity: ptr.To(resource.MustParse("100Gi")), MaximumVolumeSize: ptr.To(resource.MustParse("100Gi")),
		})
	}
	// An object of another class says nothing about this one.
	f.Capacities = append(f.Capacities, &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "x"},
		StorageClassName: "other", NodeTopology: &metav1.LabelSelector{}, Capacity: ptr.To(resource.MustParse("1Ti"))})
	return f
}

func pendingClaim(size string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: "ns", UID: "uid-huge"},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local"), AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}}
}

func TestExplainSaysNoNodeCanHoldAClaimNodeByNode(t *testing.T) {
	r := explain.Claim(pendingClaim("500Gi"), capacityFacts(true))
	for _, want := range []string{"No node can hold this claim's 500Gi of class local", "node-1 has 100Gi", "node-2 has 100Gi", "node-3 publishes none", "ask for less"} {
		if !strings.Contains(r.Summary, want) {
			t.Errorf("summary %q lacks %q", r.Summary, want)
		}
	}
	if !r.NoNodeHolds {
		t.Errorf("noNodeHolds false, summary %q", r.Summary)
	}
	fits := map[string]explain.NodeFit{}
	for _, n := range r.Capacity {
		fits[n.Node] = n.Fit
	}
	if fits["node-1"] != explain.NodeTooSmall || fits["node-2"] != explain.NodeTooSmall || fits["node-3"] != explain.NodeUnpublished {
		t.Errorf("capacity = %+v", r.Capacity)
	}
	var out bytes.Buffer
	if err := r.Table(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Capacity:", "node-1", "too small: capacity 100Gi (kube-system/csisc-node-1)", "no capacity published for the class"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestExplainShowsTheNodesThatFit(t *testing.T) {
	r := explain.Claim(pendingClaim("50Gi"), capacityFacts(true))
	if strings.Contains(r.Summary, "No node can hold") || r.NoNodeHolds {
		t.Errorf("summary %q noNodeHolds %v, but node-1 and node-2 fit", r.Summary, r.NoNodeHolds)
	}
	if len(r.Capacity) != 3 || r.Capacity[0].Fit != explain.NodeFits || r.Capacity[1].Fit != explain.NodeFits {
		t.Errorf("capacity = %+v", r.Capacity)
	}
}

// The scheduler checks no capacity for a driver without storageCapacity,
// so explain shows none.
func TestExplainShowsNoCapacityTheSchedulerIgnores(t *testing.T) {
	if r := explain.Claim(pendingClaim("500Gi"), capacityFacts(false)); r.Capacity != nil || strings.Contains(r.Summary, "No node can hold") {
		t.Errorf("capacity %+v summary %q", r.Capacity, r.Summary)
	}
}

// A claim an existing volume may serve once its pod is scheduled shows no
// capacity: the scheduler checks capacity only for a claim to provision.
func TestExplainShowsNoCapacityWhenAVolumeMayServe(t *testing.T) {
	f := capacityFacts(true)
	f.Volumes = []*v1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "local"},
		Spec: v1.PersistentVolumeSpec{StorageClassName: "local", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Ti")}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable}}}
	if r := explain.Claim(pendingClaim("500Gi"), f); r.Capacity != nil || strings.Contains(r.Summary, "No node can hold") {
		t.Errorf("capacity %+v summary %q", r.Capacity, r.Summary)
	}
}

// Once the scheduler selected a node for the claim, what the nodes offered
// no longer holds it: explain does not say that no node can.
func TestExplainSaysNothingOfRoomOnceANodeIsSelected(t *testing.T) {
	c := pendingClaim("500Gi")
	c.Annotations = map[string]string{"volume.kubernetes.io/selected-node": "node-1"}
	if r := explain.Claim(c, capacityFacts(true)); r.NoNodeHolds || strings.Contains(r.Summary, "No node can hold") {
		t.Errorf("noNodeHolds %v summary %q", r.NoNodeHolds, r.Summary)
	}
}
