package inspect_test

import (
	"context"
	"errors"
	"io"
	"testing"

	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volplane/volplane/internal/inspect"
)

// notServed makes the fake answer every request as an API server that
// does not serve the snapshot API.
func notServed() *snapfake.Clientset {
	snaps := snapfake.NewSimpleClientset()
	snaps.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := ""
		if g, ok := a.(k8stesting.GetAction); ok {
			name = g.GetName()
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "snapshot.storage.k8s.io", Resource: a.GetResource().Resource}, name)
	})
	return snaps
}

func TestExplainSaysTheSnapshotAPIIsNotInstalled(t *testing.T) {
	c := inspect.Clients{Kube: fake.NewClientset(), Snapshots: notServed()}
	for _, args := range [][2]string{{"vs", "ns/nightly"}, {"volumesnapshotcontent", "snapcontent-1"}} {
		err := inspect.ExplainWith(context.Background(), c, args[0], args[1], "default", "table", io.Discard)
		if !errors.Is(err, inspect.ErrNoSnapshotAPI) || err.Error() != "snapshot API not installed" {
			t.Errorf("explain %s %s: %v", args[0], args[1], err)
		}
	}
	// A fake core client has no snapshot client to derive.
	if err := inspect.Explain(context.Background(), fake.NewClientset(), "vs", "ns/x", "", "json", io.Discard); !errors.Is(err, inspect.ErrNoSnapshotAPI) {
		t.Errorf("without a snapshot client: %v", err)
	}
	// An object that does not exist is not a missing API.
	c.Snapshots = snapfake.NewSimpleClientset()
	if err := inspect.ExplainWith(context.Background(), c, "vs", "ns/nightly", "", "table", io.Discard); err == nil || err.Error() != "volumesnapshot ns/nightly not found" {
		t.Errorf("a snapshot that does not exist: %v", err)
	}
}
