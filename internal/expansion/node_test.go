package expansion

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pendingClaim is a claim the controller side expanded from 1Gi to 2Gi,
// waiting for the node: NodeResizePending and FileSystemResizePending.
func pendingClaim(mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
			Capacity:                  corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AllocatedResources:        corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
			AllocatedResourceStatuses: map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending},
			Conditions: []corev1.PersistentVolumeClaimCondition{
				{Type: "Other", Status: corev1.ConditionTrue},
				{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}}}
	for _, m := range mods {
		m(c)
	}
	return c
}

func status(s corev1.ClaimResourceStatus) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = s
	}
}

var now = metav1.Now()

func TestMarkNodeResizeInProgress(t *testing.T) {
	in := pendingClaim()
	out := MarkNodeResizeInProgress(in)
	if out == nil || out.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimNodeResizeInProgress {
		t.Fatalf("got %v, want NodeResizeInProgress", out)
	}
	if !equality.Semantic.DeepEqual(in, pendingClaim()) {
		t.Error("the claim passed in was modified")
	}
	if again := MarkNodeResizeInProgress(out); again != nil {
		t.Errorf("already in progress: got a change %v", again.Status)
	}
}

func TestMarkNodeResizeFinishedSetsCapacityAndClearsTheResize(t *testing.T) {
	in := pendingClaim(func(c *corev1.PersistentVolumeClaim) {
		c.Status.Conditions = append(c.Status.Conditions,
			corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue},
			corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimNodeResizeError, Status: corev1.ConditionTrue})
	})
	out := MarkNodeResizeFinished(in, resource.MustParse("2Gi"))
	if out == nil {
		t.Fatal("no change")
	}
	if got := out.Status.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("capacity %s, want 2Gi", got.String())
	}
	if out.Status.AllocatedResourceStatuses != nil {
		t.Errorf("allocatedResourceStatuses %v, want none", out.Status.AllocatedResourceStatuses)
	}
	if len(out.Status.Conditions) != 1 || out.Status.Conditions[0].Type != "Other" {
		t.Errorf("conditions %v, want only the one that is not about resizing", out.Status.Conditions)
	}
	if got := out.Status.AllocatedResources[corev1.ResourceStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("allocatedResources changed to %s", got.String())
	}
	if len(in.Status.Conditions) != 4 || in.Status.AllocatedResourceStatuses == nil {
		t.Error("the claim passed in was modified")
	}
	if again := MarkNodeResizeFinished(out, resource.MustParse("2Gi")); again != nil {
		t.Errorf("already finished: got a change %v", again.Status)
	}
}

func TestMarkNodeResizeFailed(t *testing.T) {
	boom := errors.New("rpc error: code = OutOfRange desc = too big")
	for _, tc := range []struct {
		name       string
		in         *corev1.PersistentVolumeClaim
		infeasible bool
		wantStatus corev1.ClaimResourceStatus
		wantChange bool
	}{
		{"infeasible: NodeResizeInfeasible and the condition", pendingClaim(status(corev1.PersistentVolumeClaimNodeResizeInProgress)), true,
			corev1.PersistentVolumeClaimNodeResizeInfeasible, true},
		{"other final error: the condition only", pendingClaim(status(corev1.PersistentVolumeClaimNodeResizeInProgress)), false,
			corev1.PersistentVolumeClaimNodeResizeInProgress, true},
		{"same failure again: nothing to write", pendingClaim(status(corev1.PersistentVolumeClaimNodeResizeInfeasible), func(c *corev1.PersistentVolumeClaim) {
			c.Status.Conditions = append(c.Status.Conditions, corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimNodeResizeError,
				Status: corev1.ConditionTrue, Message: "failed to expand pvc with " + boom.Error()})
		}), true, corev1.PersistentVolumeClaimNodeResizeInfeasible, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := MarkNodeResizeFailed(tc.in, boom, tc.infeasible, now)
			if (out != nil) != tc.wantChange {
				t.Fatalf("change %v, want %v", out != nil, tc.wantChange)
			}
			if out == nil {
				return
			}
			if got := out.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; got != tc.wantStatus {
				t.Errorf("status %s, want %s", got, tc.wantStatus)
			}
			var found bool
			for _, c := range out.Status.Conditions {
				if c.Type == corev1.PersistentVolumeClaimNodeResizeError {
					found = c.Status == corev1.ConditionTrue && c.Message == "failed to expand pvc with "+boom.Error()
				}
			}
			if !found || len(out.Status.Conditions) != 3 {
				t.Errorf("conditions %v: want the others kept and NodeResizeError with the error", out.Status.Conditions)
			}
			if tc.in.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimNodeResizeInProgress || len(tc.in.Status.Conditions) != 2 {
				t.Error("the claim passed in was modified")
			}
		})
	}
}
