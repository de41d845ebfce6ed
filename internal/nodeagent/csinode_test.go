package nodeagent

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volplane/volplane/internal/mounting"
)

// A node without a CSINode gets one created with its drivers in it: one
// write, owned by the Node; one made meanwhile by another hand is updated
// instead; one that already lists the drivers is not written.
func TestCSINodeIsCreatedWithItsDriversInOneWrite(t *testing.T) {
	ctx := context.Background()
	drivers := []mounting.NodeDriver{{Name: "b.example.com", NodeID: "n1"}, {Name: "a.example.com", NodeID: "id-1", Topology: map[string]string{"zone": "z1"}}}
	writes := func(c *fake.Clientset) (verbs []string) {
		for _, a := range c.Actions() {
			if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
				verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
			}
		}
		return verbs
	}

	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1"}})
	a := &Agent{cfg: Config{Client: client}}
	n := &nodeState{name: "n1"}
	if err := a.writeCSINode(ctx, n, drivers); err != nil {
		t.Fatal(err)
	}
	if got := writes(client); len(got) != 1 || got[0] != "create csinodes" {
		t.Errorf("writes %v: want one create", got)
	}
	made, err := client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(made.Spec.Drivers) != 2 || made.Spec.Drivers[0].Name != "a.example.com" || made.Spec.Drivers[0].NodeID != "id-1" ||
		len(made.Spec.Drivers[0].TopologyKeys) != 1 || made.Spec.Drivers[1].Name != "b.example.com" {
		t.Errorf("drivers %+v: want both, sorted, with their IDs and topology keys", made.Spec.Drivers)
	}
	if len(made.OwnerReferences) != 1 || made.OwnerReferences[0].Kind != "Node" || made.OwnerReferences[0].UID != "uid-n1" {
		t.Errorf("owners %+v: want the Node", made.OwnerReferences)
	}

	client.ClearActions()
	if err := a.writeCSINode(ctx, n, drivers); err != nil {
		t.Fatal(err)
	}
	if got := writes(client); len(got) != 0 {
		t.Errorf("registered again: writes %v, want none", got)
	}

	// Created empty by another hand between our read and our create: the
	// create is refused, and the other's CSINode is updated.
	client = fake.NewClientset()
	client.PrependReactor("create", "csinodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		other := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		if err := client.Tracker().Add(other); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewAlreadyExists(storagev1.Resource("csinodes"), "n1")
	})
	a = &Agent{cfg: Config{Client: client}}
	if err := a.writeCSINode(ctx, n, drivers); err != nil {
		t.Fatal(err)
	}
	if got := writes(client); len(got) != 2 || got[1] != "update csinodes" {
		t.Errorf("writes %v: want the refused create, then an update", got)
	}
	if cur, err := client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil || len(cur.Spec.Drivers) != 2 {
		t.Errorf("CSINode %+v, %v: want both drivers", cur, err)
	}
}

// A healthy driver's storage health costs one read of the CSINode, not one
// per probe; conditions are written and read back on every probe while
// they last; cleared, the entry goes and the reads stop again. Another
// driver's entry is kept throughout.
func TestHealthyStorageIsReadOnceNotPerProbe(t *testing.T) {
	ctx := context.Background()
	other := storagev1.StorageHealth{Name: "other.example.com", HealthConditions: []storagev1.StorageHealthCondition{{Status: storagev1.StorageDegraded, Reason: "Slow"}}}
	client := fake.NewClientset(&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: storagev1.CSINodeStatus{StorageHealth: []storagev1.StorageHealth{other}}})
	a := &Agent{cfg: Config{Client: client}}
	sick := []storagev1.StorageHealthCondition{{Status: storagev1.StorageUnreachable, Reason: "DataDirUnreachable"}}
	probe := func(conds []storagev1.StorageHealthCondition) (reads, updates int) {
		t.Helper()
		client.ClearActions()
		if err := a.writeStorageHealth(ctx, "n1", "a.example.com", conds); err != nil {
			t.Fatal(err)
		}
		for _, act := range client.Actions() {
			switch act.GetVerb() {
			case "get":
				reads++
			case "update":
				updates++
			}
		}
		return reads, updates
	}
	entries := func() []storagev1.StorageHealth {
		cur, err := client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cur.Status.StorageHealth
	}

	for i, want := range []struct {
		conds          []storagev1.StorageHealthCondition
		reads, updates int
		entries        int
	}{
		{nil, 1, 0, 1},  // healthy: read once, nothing to write
		{nil, 0, 0, 1},  // still healthy: no read
		{sick, 1, 1, 2}, // unreachable: read, entry written
		{sick, 1, 0, 2}, // still: read back, no write
		{nil, 1, 1, 1},  // healthy again: entry removed
		{nil, 0, 0, 1},  // and no more reads
	} {
		reads, updates := probe(want.conds)
		if reads != want.reads || updates != want.updates {
			t.Errorf("probe %d: %d reads, %d updates; want %d, %d", i, reads, updates, want.reads, want.updates)
		}
		if got := entries(); len(got) != want.entries || got[0].Name != other.Name {
			t.Errorf("probe %d: entries %+v; want %d, the other driver's first", i, got, want.entries)
		}
	}

	// A failed write may have landed: the next healthy probe reads again.
	client.PrependReactor("update", "csinodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewTimeoutError("slow", 1)
	})
	if err := a.writeStorageHealth(ctx, "n1", "a.example.com", sick); err == nil {
		t.Fatal("update refused: want its error")
	}
	if reads, _ := probe(nil); reads != 1 {
		t.Errorf("healthy after a failed write: %d reads, want 1", reads)
	}
}
