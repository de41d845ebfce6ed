package expansion

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/expansion"
)

// The reference's three writes for an expansion the controller finishes.
func threeWrites(ns, claim, pv string) []string {
	status := "PATCH /api/v1/namespaces/" + ns + "/persistentvolumeclaims/" + claim + "/status"
	return []string{status, "PATCH /api/v1/persistentvolumes/" + pv, status}
}

// An unused claim of the bundled class grows when its request does: the
// volume, the PV and the claim, with the reference's events and writes.
func TestUnusedClaimGrows(t *testing.T) {
	e := newEnv(t)
	r := e.start(0)
	_, pvName := e.claim("data", bundle.ImmediateClass, "1Mi")
	if err := e.request("data", "2Mi"); err != nil {
		t.Fatalf("grow the request: %v", err)
	}
	c := e.waitCapacity("data", "2Mi")
	if got := c.Status.AllocatedResources.Storage(); got.Cmp(resource.MustParse("2Mi")) != 0 {
		t.Errorf("allocatedResources %s, want 2Mi", got.String())
	}
	if c.Annotations[expansion.AnnNodeExpansionNotRequired] != "true" {
		t.Errorf("annotations %v: want node-expansion-not-required", c.Annotations)
	}
	if got := e.getPV(pvName).Spec.Capacity.Storage(); got.Cmp(resource.MustParse("2Mi")) != 0 {
		t.Errorf("PV capacity %s, want 2Mi", got.String())
	}
	e.writesAre(r, threeWrites(e.ns, "data", pvName), "data", pvName)
	want := []string{"Normal Resizing External resizer is resizing volume " + pvName, "Normal VolumeResizeSuccessful Resize volume succeeded"}
	e.eventually("the resizer's events", func() string {
		got := e.events("data")
		for _, w := range want {
			if !hasEvent(got, w) {
				return fmt.Sprintf("events %q, want %q", got, want)
			}
		}
		return ""
	})
}

// A class that disallows expansion: the API server refuses the edit, and
// nothing of ours writes to the claim. (The resizer is shown to be alive
// and caught up by a claim of another class it grows afterwards.)
func TestClassWithoutExpansionRefusesTheEdit(t *testing.T) {
	e := newEnv(t)
	r := e.start(0)
	e.claim("fixed", fixedClass, "1Mi")
	err := e.request("fixed", "2Mi")
	want := `persistentvolumeclaims "fixed" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`
	if err == nil || err.Error() != want {
		t.Fatalf("edit: %v\nwant %s", err, want)
	}
	e.claim("other", bundle.ImmediateClass, "1Mi")
	if err := e.request("other", "2Mi"); err != nil {
		t.Fatal(err)
	}
	e.waitCapacity("other", "2Mi")
	if got := r.Writes.About("fixed"); len(got) != 0 {
		t.Errorf("writes to the refused claim: %q", got)
	}
	if got := e.events("fixed"); len(got) != 0 {
		t.Errorf("events on the refused claim: %q", got)
	}
}

// Shrinking below the capacity is refused by the API server; lowering a
// request stays possible only above it.
func TestShrinkingBelowCapacityIsRefused(t *testing.T) {
	e := newEnv(t)
	e.start(0)
	e.claim("data", bundle.ImmediateClass, "1Mi")
	if err := e.request("data", "2Mi"); err != nil {
		t.Fatal(err)
	}
	e.waitCapacity("data", "2Mi")
	err := e.request("data", "1Mi")
	want := "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("shrink: %v\nwant it to say %s", err, want)
	}
}

// A size the driver can never give is infeasible: the claim says so, the
// user lowers the request to a size still above the old capacity, and that
// is expanded, clearing the failure.
func TestInfeasibleExpansionRecoversWhenTheRequestIsLowered(t *testing.T) {
	e := newEnv(t)
	e.start(0)
	_, pvName := e.claim("data", bundle.ImmediateClass, "1Mi")
	if err := e.request("data", "2Pi"); err != nil {
		t.Fatal(err)
	}
	e.eventually("claim infeasible", func() string {
		c := e.getClaim("data")
		if expansion.ResizeStatus(c) != corev1.PersistentVolumeClaimControllerResizeInfeasible {
			return fmt.Sprintf("resize status %q", expansion.ResizeStatus(c))
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == corev1.PersistentVolumeClaimControllerResizeError &&
				strings.HasPrefix(cond.Message, "failed to expand pvc with rpc error: code = OutOfRange desc = ") {
				return ""
			}
		}
		return fmt.Sprintf("conditions %v", c.Status.Conditions)
	})
	failedPrefix := `Warning VolumeResizeFailed resize volume "` + pvName + `" by resizer "hostpath.csi.volplane.io" failed: rpc error: code = OutOfRange desc = `
	e.eventually("VolumeResizeFailed", func() string {
		got := e.events("data")
		if slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, failedPrefix) }) {
			return ""
		}
		return fmt.Sprintf("events %q", got)
	})
	if err := e.request("data", "2Mi"); err != nil {
		t.Fatalf("lower the request: %v", err)
	}
	c := e.waitCapacity("data", "2Mi")
	if got := c.Status.AllocatedResources.Storage(); got.Cmp(resource.MustParse("2Mi")) != 0 {
		t.Errorf("allocatedResources %s, want 2Mi", got.String())
	}
	if got := e.getPV(pvName).Spec.Capacity.Storage(); got.Cmp(resource.MustParse("2Mi")) != 0 {
		t.Errorf("PV capacity %s", got.String())
	}
}

// A resizer that stopped right after marking the claim in progress leaves
// it so; the next one finishes the expansion.
func TestCrashAfterTheFirstWriteIsFinishedByTheNextResizer(t *testing.T) {
	e := newEnv(t)
	_, pvName := e.claim("data", bundle.ImmediateClass, "1Mi")
	if err := e.request("data", "2Mi"); err != nil {
		t.Fatal(err)
	}
	crashed := e.start(1)
	<-crashed.Ended()
	c := e.getClaim("data")
	if expansion.ResizeStatus(c) != corev1.PersistentVolumeClaimControllerResizeInProgress ||
		c.Status.Capacity.Storage().Cmp(resource.MustParse("1Mi")) != 0 {
		t.Fatalf("after the crash: %+v", c.Status)
	}
	r := e.start(0)
	e.waitCapacity("data", "2Mi")
	if got := e.getPV(pvName).Spec.Capacity.Storage(); got.Cmp(resource.MustParse("2Mi")) != 0 {
		t.Errorf("PV capacity %s", got.String())
	}
	// The claim is already marked: the PV and the finish are all that is left.
	want := threeWrites(e.ns, "data", pvName)[1:]
	e.writesAre(r, want, "data", pvName)
}

// The claim status a crashed resizer would have left, written with no
// resizer running: a resizer started afterwards finishes the expansion.
func TestRestartMidExpansionFinishes(t *testing.T) {
	e := newEnv(t)
	_, pvName := e.claim("data", bundle.ImmediateClass, "1Mi")
	if err := e.request("data", "2Mi"); err != nil {
		t.Fatal(err)
	}
	// Retried on conflict: the claim is the user's and the binder's too.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		inProgress := e.getClaim("data")
		inProgress.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Mi")}
		inProgress.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
			corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress}
		inProgress.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimResizing,
			Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).UpdateStatus(e.ctx, inProgress, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("write the crashed status: %v", err)
	}
	calls := bed.calls.count("ControllerExpandVolume")
	r := e.start(0)
	e.waitCapacity("data", "2Mi")
	if got := e.getPV(pvName).Spec.Capacity.Storage(); got.Cmp(resource.MustParse("2Mi")) != 0 {
		t.Errorf("PV capacity %s", got.String())
	}
	if n := bed.calls.count("ControllerExpandVolume") - calls; n != 1 {
		t.Errorf("%d ControllerExpandVolume calls, want 1", n)
	}
	want := threeWrites(e.ns, "data", pvName)[1:]
	e.writesAre(r, want, "data", pvName)
}

// A block volume needs node expansion after the driver's (the bundled
// driver says so for block): the claim waits for the node, its capacity
// unchanged, and says so as the reference does.
func TestBlockVolumeWaitsForTheNode(t *testing.T) {
	e := newEnv(t)
	r := e.start(0)
	block := func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }
	_, pvName := e.claim("raw", bundle.ImmediateClass, "1Mi", block)
	if err := e.request("raw", "2Mi"); err != nil {
		t.Fatal(err)
	}
	e.eventually("claim pending on the node", func() string {
		c := e.getClaim("raw")
		if expansion.ResizeStatus(c) != corev1.PersistentVolumeClaimNodeResizePending {
			return fmt.Sprintf("resize status %q", expansion.ResizeStatus(c))
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending && cond.Message == expansion.MessageNodeResizePending {
				return ""
			}
		}
		return fmt.Sprintf("conditions %v", c.Status.Conditions)
	})
	c := e.getClaim("raw")
	if c.Status.Capacity.Storage().Cmp(resource.MustParse("1Mi")) != 0 || c.Status.AllocatedResources.Storage().Cmp(resource.MustParse("2Mi")) != 0 {
		t.Errorf("capacity %s, allocated %s: want 1Mi until the node expands, 2Mi allocated",
			c.Status.Capacity.Storage().String(), c.Status.AllocatedResources.Storage().String())
	}
	if _, ok := c.Annotations[expansion.AnnNodeExpansionNotRequired]; ok {
		t.Error("node-expansion-not-required on a claim that needs the node")
	}
	if got := e.getPV(pvName).Spec.Capacity.Storage(); got.Cmp(resource.MustParse("2Mi")) != 0 {
		t.Errorf("PV capacity %s", got.String())
	}
	e.writesAre(r, threeWrites(e.ns, "raw", pvName), "raw", pvName)
	e.eventually("FileSystemResizeRequired", func() string {
		if got := e.events("raw"); !hasEvent(got, "Normal FileSystemResizeRequired Require file system resize of volume on node") {
			return fmt.Sprintf("events %q", got)
		}
		return ""
	})
}

// The class's controller-expand secret reaches ControllerExpandVolume
// through the PV's controllerExpandSecretRef.
func TestExpandSecretOfTheClassIsSent(t *testing.T) {
	e := newEnv(t)
	e.start(0)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: secretName},
		Data: map[string][]byte{"token": []byte("s3cret")}}
	if _, err := e.client.CoreV1().Secrets(e.ns).Create(e.ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, pvName := e.claim("data", secretClass, "1Mi")
	ref := e.getPV(pvName).Spec.CSI.ControllerExpandSecretRef
	if ref == nil || ref.Name != secretName || ref.Namespace != e.ns {
		t.Fatalf("controllerExpandSecretRef %+v", ref)
	}
	if err := e.request("data", "2Mi"); err != nil {
		t.Fatal(err)
	}
	e.waitCapacity("data", "2Mi")
	if got := bed.calls.expandSecrets(e.getPV(pvName).Spec.CSI.VolumeHandle); got["token"] != "s3cret" {
		t.Errorf("secrets sent %v", got)
	}
}

// A request beyond int64, which the API server accepts and Quantity.Value
// would wrap to 1Gi, is refused as infeasible without asking the driver:
// one status write and one event, not a loop. Lowering the request then
// expands as usual.
func TestRequestBeyondInt64IsRefusedOnce(t *testing.T) {
	e := newEnv(t)
	r := e.start(0)
	_, pvName := e.claim("huge", bundle.ImmediateClass, "1Mi")
	calls := bed.calls.count("ControllerExpandVolume")
	const huge = "18446744074783293440" // 2^64 + 1Gi
	if err := e.request("huge", huge); err != nil {
		t.Fatalf("the API server refused %s: %v", huge, err)
	}
	e.eventually("claim infeasible", func() string {
		c := e.getClaim("huge")
		if expansion.ResizeStatus(c) != corev1.PersistentVolumeClaimControllerResizeInfeasible {
			return fmt.Sprintf("resize status %q", expansion.ResizeStatus(c))
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == corev1.PersistentVolumeClaimControllerResizeError && strings.Contains(cond.Message, huge) {
				return ""
			}
		}
		return fmt.Sprintf("conditions %v", c.Status.Conditions)
	})
	if got := e.getPV(pvName).Spec.Capacity.Storage(); got.Cmp(resource.MustParse("1Mi")) != 0 {
		t.Errorf("PV capacity %s, want 1Mi", got.String())
	}
	if err := e.request("huge", "2Mi"); err != nil {
		t.Fatalf("lower the request: %v", err)
	}
	e.waitCapacity("huge", "2Mi")
	status := "PATCH /api/v1/namespaces/" + e.ns + "/persistentvolumeclaims/huge/status"
	e.writesAre(r, append([]string{status}, threeWrites(e.ns, "huge", pvName)...), "huge", pvName)
	if n := bed.calls.count("ControllerExpandVolume") - calls; n != 1 {
		t.Errorf("%d ControllerExpandVolume calls, want 1 (for 2Mi only)", n)
	}
	failed := slices.DeleteFunc(e.events("huge"), func(s string) bool { return !strings.HasPrefix(s, "Warning VolumeResizeFailed") })
	if len(failed) != 1 || !strings.Contains(failed[0], huge) {
		t.Errorf("VolumeResizeFailed events %q, want one naming the size", failed)
	}
}
