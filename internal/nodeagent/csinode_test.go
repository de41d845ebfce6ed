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
