package explain

import (
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/inspect"
)

// A claim no volume fits: every volume is listed with the binder's reason,
// counted by reason, one at least of each reason a live cluster can hold.
func TestExplainPendingClaimCountsEveryVolumeByReason(t *testing.T) {
	e := newEnv(t)
	const manual = "explain-manual"
	e.class(manual, "kubernetes.io/no-provisioner")
	e.pv("small-1", "1Gi", manual, pvLabels("tier", "fast"))
	e.pv("small-2", "2Gi", manual, pvLabels("tier", "fast"))
	e.pv("other-class", "10Gi", "explain-other")
	e.pv("block", "10Gi", manual, pvBlock())
	e.pv("read-only", "10Gi", manual, pvModes(corev1.ReadOnlyMany))
	e.pv("slow", "10Gi", manual, pvLabels("tier", "slow"))
	e.pv("taken", "10Gi", manual, pvLabels("tier", "fast"), pvClaimRef(e.ns, "db", "0b6f7a4e-1111-4c1e-9a8a-000000000001"))
	e.pv("reserved", "10Gi", manual, pvLabels("tier", "fast"), pvClaimRef(e.ns, "cache", ""))
	e.pv("doomed", "10Gi", manual, pvLabels("tier", "fast"), pvHeld())
	e.pv("tuned", "10Gi", manual, pvLabels("tier", "fast"), pvAttributesClass("volplane-fast"))
	if err := e.client.CoreV1().PersistentVolumes().Delete(e.ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, pv := range []string{"small-1", "small-2", "other-class", "block", "read-only", "slow", "reserved", "tuned"} {
		e.eventually("volume "+pv+" Available", e.volumePhase(pv, corev1.VolumeAvailable))
	}
	e.eventually("volume taken Released", e.volumePhase("taken", corev1.VolumeReleased))
	e.claim("data", "5Gi", manual, claimSelector("tier", "fast"))
	e.eventually("claim data Pending with its event", e.hasEvent("data", "ProvisioningFailed"))

	e.check("pending-claim", "pvc", e.ns+"/data")
	// The free volume's side of the same story.
	e.check("available-volume", "pv", "small-1")
}

// A claim of a class that waits for the first consumer names the pod it
// waits for.
func TestExplainWaitForFirstConsumerClaimNamesThePodsItWaitsFor(t *testing.T) {
	e := newEnv(t)
	e.pv("local", "1Gi", bundle.WaitClass)
	e.eventually("volume local Available", e.volumePhase("local", corev1.VolumeAvailable))
	e.claim("data", "1Gi", bundle.WaitClass)
	e.pod("web", "no-such-node", "data")
	e.eventually("claim data waits for pod web", e.hasEvent("data", "WaitForPodScheduled"))
	e.check("wait-for-pod", "pvc", "data")
}

// A claim of a class whose provisioner nothing runs says so, and counts
// the failure its class's late arrival caused.
func TestExplainClaimWhoseProvisionerNothingServes(t *testing.T) {
	e := newEnv(t)
	// The claim comes first, so its class is missing once, for certain: the
	// report counts that failure.
	e.claim("orphan", "1Gi", "explain-unserved")
	e.eventually("claim orphan told its class is missing", e.hasEvent("orphan", "ProvisioningFailed"))
	e.class("explain-unserved", "example.com/nobody")
	e.eventually("claim orphan handed to its provisioner", e.hasEvent("orphan", "ExternalProvisioning"))
	e.check("provisioner-not-served", "pvc", "orphan")
}

// A claim whose provisioner fails: the attempts and the last error.
func TestExplainClaimShowsProvisioningFailures(t *testing.T) {
	e := newEnv(t)
	e.claim("huge", "80Gi", bundle.ImmediateClass)
	e.eventually("provisioning of huge failed", e.hasEvent("huge", "ProvisioningFailed"))
	e.check("provisioning-failed", "pvc", "huge")
}

// A bound network volume used by a pod: attached and mounted on its node;
// a pod on a second node waits (Multi-Attach); deleting the claim is held
// by both pods.
func TestExplainBoundClaimShowsAttachMountAndWhatHoldsItsDeletion(t *testing.T) {
	e := newEnv(t)
	e.claim("shared", "1Gi", bundle.NetworkClass)
	node := stack.CP.Nodes[0]
	e.pod("app", node, "shared")
	e.eventually("claim shared Bound", e.claimPhase("shared", corev1.ClaimBound))
	e.eventually("pod app Running", e.podRunning("app"))
	e.check("bound-in-use", "pvc", "shared")
	pv := e.getClaim("shared").Spec.VolumeName
	e.check("bound-volume", "pv", pv)

	// A second pod on another node cannot have the single-node volume.
	e.pod("reader", stack.CP.Nodes[1], "shared")
	e.eventually("pod reader told why it waits", e.podEvent("reader", "FailedAttachVolume"))
	e.check("multi-attach", "pvc", "shared")

	if err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, "shared", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("claim shared being deleted", func() string {
		if e.getClaim("shared").DeletionTimestamp == nil {
			return "no deletionTimestamp yet"
		}
		return ""
	})
	e.check("deleting-in-use", "pvc", "shared")
}

// A Retain volume whose claim is gone stays Released; explain says what to do.
func TestExplainReleasedRetainVolumeSaysHowToReuseIt(t *testing.T) {
	e := newEnv(t)
	e.pv("kept", "1Gi", "explain-static")
	e.claim("old", "1Gi", "explain-static")
	e.eventually("claim old Bound", e.claimPhase("old", corev1.ClaimBound))
	if err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("volume kept Released", e.volumePhase("kept", corev1.VolumeReleased))
	e.check("released-retain", "pv", "kept")
}

func TestExplainSaysClearlyWhatItCannotExplain(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ kind, name, want string }{
		{"pvc", "missing", "persistentvolumeclaim " + e.ns + "/missing not found"},
		{"pvc", "other/missing", "persistentvolumeclaim other/missing not found"},
		{"pv", "missing", "persistentvolume missing not found"},
		{"vs", "missing", "volumesnapshot " + e.ns + "/missing not found"},
		{"volumesnapshotcontent", "missing", "volumesnapshotcontent missing not found"},
		{"pod", "web", `cannot explain "pod": want pvc NAMESPACE/NAME, pv NAME, volumesnapshot NAMESPACE/NAME, volumesnapshotcontent NAME, volumegroupsnapshot NAMESPACE/NAME or volumegroupsnapshotcontent NAME`},
	} {
		err := inspect.Explain(e.ctx, e.client, tc.kind, tc.name, e.ns, "table", io.Discard)
		if err == nil || err.Error() != tc.want {
			t.Errorf("explain %s %s: error %v, want %q", tc.kind, tc.name, err, tc.want)
		}
	}
}

// With the loops stopped, a claim that several volumes fit shows the one the
// binder would bind and why each other fitting volume lost to it; a volume
// in phase Failed is not free.
func TestExplainClaimThatFitsShowsTheChoiceAndWhyTheOthersLost(t *testing.T) {
	e := newEnv(t)
	if err := stack.StopLoops(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.StartLoops)
	const class = "explain-choice"
	e.pv("exact", "5Gi", class)
	e.pv("larger", "8Gi", class)
	e.pv("twin", "5Gi", class)
	e.pv("multi", "5Gi", class, pvModes(corev1.ReadWriteOnce, corev1.ReadWriteMany))
	e.pv("failed", "5Gi", class)
	failed := e.getVolume("failed")
	failed.Status.Phase = corev1.VolumeFailed
	if _, err := e.client.CoreV1().PersistentVolumes().UpdateStatus(e.ctx, failed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.claim("data", "5Gi", class)
	e.check("fits", "pvc", "data")
}
