package cluster

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// A node's Lease is renewed with one write from the copy last written, as
// the kubelet renews it; a Lease another hand changed (a conflict) or
// deleted is read again, or created, and renewed.
func TestNodeLeaseRenewalIsOneWrite(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	client.PrependReactor("update", "leases", conflictOnStaleVersion(client))
	a := newNodeAgent(client, 1)
	verbs := func() []string {
		var out []string
		for _, act := range client.Actions() {
			out = append(out, act.GetVerb())
		}
		client.ClearActions()
		return out
	}
	for range 3 {
		if err := a.renewLease(ctx, "node-1"); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := verbs(), []string{"get", "create", "update", "update"}; !slices.Equal(got, want) {
		t.Errorf("first renewals %v, want %v", got, want)
	}
	leases := client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l, _ := leases.Get(ctx, "node-1", metav1.GetOptions{})
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil { // another writer
		t.Fatal(err)
	}
	client.ClearActions()
	if err := a.renewLease(ctx, "node-1"); err != nil {
		t.Fatal(err)
	}
	if got, want := verbs(), []string{"update", "get", "update"}; !slices.Equal(got, want) {
		t.Errorf("renewal after another writer %v, want %v", got, want)
	}
	if err := leases.Delete(ctx, "node-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	if err := a.renewLease(ctx, "node-1"); err != nil {
		t.Fatal(err)
	}
	if got, want := verbs(), []string{"update", "get", "create"}; !slices.Equal(got, want) {
		t.Errorf("renewal of a deleted lease %v, want %v", got, want)
	}
}

// conflictOnStaleVersion makes the fake API server refuse an update whose
// resourceVersion is not the stored one, as the real one does, and number
// the versions it stores.
func conflictOnStaleVersion(client *fake.Clientset) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		upd := action.(clienttesting.UpdateAction).GetObject().(metav1.Object)
		cur, err := client.Tracker().Get(action.GetResource(), action.GetNamespace(), upd.GetName())
		if err != nil {
			return true, nil, err
		}
		have := cur.(metav1.Object).GetResourceVersion()
		if upd.GetResourceVersion() != have {
			return true, nil, apierrors.NewConflict(action.GetResource().GroupResource(), upd.GetName(), errors.New("stale resourceVersion"))
		}
		n, _ := strconv.Atoi(have)
		upd.SetResourceVersion(strconv.Itoa(n + 1))
		obj := action.(clienttesting.UpdateAction).GetObject()
		if err := client.Tracker().Update(action.GetResource(), obj, action.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	}
}
