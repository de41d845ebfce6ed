package checkup_test

import (
	"context"
	"io"
	"slices"
	"testing"

	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volplane/volplane/internal/checkup"
)

func TestDoctorGoesOnWithoutTheSnapshotAPI(t *testing.T) {
	snaps := snapfake.NewSimpleClientset()
	snaps.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "snapshot.storage.k8s.io", Resource: a.GetResource().Resource}, "")
	})
	r, err := checkup.Doctor(context.Background(), fake.NewClientset(), checkup.DoctorConfig{Snapshots: snaps, Output: "json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Notes, "snapshots not checked: snapshot API not installed") {
		t.Errorf("notes %q", r.Notes)
	}
	s, err := checkup.ReadInvariantsWith(context.Background(), fake.NewClientset(), snaps, nil)
	if err != nil || !s.SnapshotsRead || len(s.Contents) != 0 {
		t.Errorf("invariants without the snapshot API: read %v, %v", s.SnapshotsRead, err)
	}
}
