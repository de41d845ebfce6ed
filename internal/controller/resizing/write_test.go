package resizing

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/expansion"
)

// A claim status write is one patch of the status subresource, carrying
// the resourceVersion under IfUnchanged only; no change writes nothing.
func TestWriteClaimPatchesTheStatusOnce(t *testing.T) {
	old := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", ResourceVersion: "5"},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound,
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}
	want := expansion.MarkResizeFinished(old, resource.MustParse("2Gi"))
	for _, tc := range []struct {
		pre    claimstatus.Precondition
		withRV bool
	}{{claimstatus.IfUnchanged, true}, {claimstatus.Always, false}} {
		client := fake.NewClientset(old.DeepCopy())
		client.ClearActions()
		out, err := WriteClaim(context.Background(), client, old, want, tc.pre)
		if err != nil {
			t.Fatalf("%s: %v", tc.pre, err)
		}
		if out.Status.Capacity.Storage().String() != "2Gi" {
			t.Errorf("%s: returned %+v", tc.pre, out.Status)
		}
		acts := client.Actions()
		if len(acts) != 1 || acts[0].GetVerb() != "patch" || acts[0].GetSubresource() != "status" {
			t.Fatalf("%s: actions %v", tc.pre, acts)
		}
		patch := string(acts[0].(k8stesting.PatchAction).GetPatch())
		if got := strings.Contains(patch, `"resourceVersion":"5"`); got != tc.withRV {
			t.Errorf("%s: patch %s", tc.pre, patch)
		}
	}
	client := fake.NewClientset(old.DeepCopy())
	client.ClearActions()
	if out, err := WriteClaim(context.Background(), client, old, nil, claimstatus.IfUnchanged); err != nil || out != old || len(client.Actions()) != 0 {
		t.Errorf("nothing to write: %v, %v, actions %v", out, err, client.Actions())
	}
}
