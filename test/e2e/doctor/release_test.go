package doctor

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/doctor"
)

// releaseWait is release's wait for the binder in these tests.
const releaseWait = 30 * time.Second

// released makes a Retain volume Released: bound to a claim, which is
// then deleted.
func (e *env) released(pv, claim string) {
	e.t.Helper()
	e.pv(pv, manual, hostPath(pv))
	e.claimOf(claim, pv)
	e.eventually("claim "+claim+" Bound", e.claimPhase(claim, corev1.ClaimBound))
	e.deleteClaim(claim)
	e.eventually("volume "+pv+" Released", e.volumePhase(pv, corev1.VolumeReleased))
}

func (e *env) release(name string, wait time.Duration) (string, error) {
	return e.releaseTo(name, "", wait)
}

// releaseTo releases the volume to the claim of this test's namespace
// named to ("" for any claim).
func (e *env) releaseTo(name, to string, wait time.Duration) (string, error) {
	var out bytes.Buffer
	cfg := checkup.ReleaseConfig{Name: name, Wait: wait}
	if to != "" {
		cfg.To = types.NamespacedName{Namespace: e.ns, Name: to}
	}
	err := checkup.Release(e.ctx, e.client, cfg, &out)
	return out.String(), err
}

// The story: a Retain volume stays Released after its claim is
// deleted, even when a claim of the same name comes back; release makes
// it Available, and the new claim binds it.
func TestReleaseMakesARetainedVolumeAvailableForANewClaim(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.cleanUp("reuse") })
	e.released("reuse", "data")
	e.claim("data", "1Gi", manual) // a new claim, another UID
	r, _, _ := e.doctor()
	if len(r.Findings) != 2 || r.Findings[0].Kind != doctor.KindClaimPending || r.Findings[1].Kind != doctor.KindRetainedVolume ||
		r.Problems() != 1 {
		t.Fatalf("doctor before release: %+v", r.Findings)
	}

	out, err := e.release("reuse", releaseWait)
	if err != nil {
		t.Fatalf("release: %v\n%s", err, out)
	}
	if !strings.Contains(out, "persistentvolume reuse released: claim "+e.ns+"/data (uid ") ||
		!strings.Contains(out, "the claim of that name now is a new one") {
		t.Errorf("release said:\n%s", out)
	}
	e.eventually("the new claim data Bound", e.claimPhase("data", corev1.ClaimBound))
	if got := e.getClaim("data").Spec.VolumeName; got != "reuse" {
		t.Fatalf("claim data bound to %q, want reuse", got)
	}
	if r, _, _ := e.doctor(); len(r.Findings) != 0 {
		t.Errorf("doctor after release: %+v", r.Findings)
	}
}

func TestReleaseRefusesWithTheReason(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.cleanUp("in-use", "doomed") })
	e.pv("in-use", manual, hostPath("in-use"))
	e.claim("data", "1Gi", manual)
	e.eventually("claim data Bound", e.claimPhase("data", corev1.ClaimBound))
	e.claim("dynamic", "1Gi", bundle.ImmediateClass)
	e.eventually("claim dynamic Bound", e.claimPhase("dynamic", corev1.ClaimBound))
	e.pv("doomed", manual, hostPath("doomed"), holdFinalizer)
	e.must(e.client.CoreV1().PersistentVolumes().Delete(e.ctx, "doomed", metav1.DeleteOptions{}))
	before := e.getVolume("in-use").ResourceVersion

	for _, tc := range []struct {
		pv      string
		refusal doctor.Refusal
		reason  string
	}{
		{"no-such-volume", doctor.RefuseNotFound, "persistentvolume no-such-volume: not found"},
		{"doomed", doctor.RefuseBeingDeleted, "persistentvolume doomed: it is being deleted"},
		{e.getClaim("dynamic").Spec.VolumeName, doctor.RefuseNotRetain, "its reclaim policy is Delete, not Retain"},
		{"in-use", doctor.RefuseNotReleased, "persistentvolume in-use: it is Bound, not Released"},
	} {
		out, err := e.release(tc.pv, time.Second)
		var refused *checkup.RefusedError
		if !errors.As(err, &refused) || refused.Decision.Refusal != tc.refusal || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("release %s: error %v, want %s: ...%q...", tc.pv, err, tc.refusal, tc.reason)
		}
		if out != "" {
			t.Errorf("release %s refused, yet said %q", tc.pv, out)
		}
	}
	if after := e.getVolume("in-use").ResourceVersion; after != before {
		t.Errorf("a refused release wrote volume in-use (resourceVersion %s → %s)", before, after)
	}
}

// Without a binder, nothing marks the volume Available: release says so.
func TestReleaseSaysWhenNothingMarksTheVolumeAvailable(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.cleanUp("orphan") })
	e.released("orphan", "gone")
	e.must(stack.StopLoops())
	t.Cleanup(func() { stack.StartLoops() })

	out, err := e.release("orphan", 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	want := "nothing marked persistentvolume orphan Available within 500ms: is a binder running"
	if !strings.Contains(out, want) {
		t.Errorf("release said:\n%s\nwant ...%s...", out, want)
	}
	if pv := e.getVolume("orphan"); pv.Spec.ClaimRef != nil {
		t.Errorf("claimRef not cleared: %+v", pv.Spec.ClaimRef)
	}
}

// Released to one named claim, the volume binds that claim, and not another
// that fits it as well and asked first.
func TestReleaseToOneClaimBindsItAndNoOther(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.cleanUp("heirloom") })
	e.released("heirloom", "old")
	e.claim("first", "1Gi", manual)
	e.claim("heir", "1Gi", manual)
	r, _, _ := e.doctor()
	fix := r.Findings[len(r.Findings)-1].Fixes[0]
	if fix.Command != "volplane release pv heirloom --to NAMESPACE/NAME" || fix.Risk == "" {
		t.Errorf("doctor advises %+v", fix)
	}

	out, err := e.releaseTo("heirloom", "heir", releaseWait)
	if err != nil {
		t.Fatalf("release: %v\n%s", err, out)
	}
	if !strings.Contains(out, "pre-bound to claim "+e.ns+"/heir (uid ") || !strings.Contains(out, "is Bound to claim "+e.ns+"/heir") {
		t.Errorf("release said:\n%s", out)
	}
	if got := e.getClaim("heir").Spec.VolumeName; got != "heirloom" {
		t.Fatalf("claim heir bound to %q, want heirloom", got)
	}
	if c := e.getClaim("first"); c.Status.Phase != corev1.ClaimPending || c.Spec.VolumeName != "" {
		t.Errorf("claim first: %s, volume %q", c.Status.Phase, c.Spec.VolumeName)
	}
}

// A VolumeAttachment still naming the volume keeps it from release.
func TestReleaseRefusesWhileTheVolumeIsAttached(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.cleanUp("attached") })
	e.released("attached", "old")
	e.must(stack.StopLoops()) // nothing detaches the hand-made attachment meanwhile
	t.Cleanup(func() { stack.StartLoops() })
	e.attachment("doctor-still-attached", "attached", stack.CP.Nodes[0])
	t.Cleanup(func() {
		_ = e.client.StorageV1().VolumeAttachments().Delete(e.ctx, "doctor-still-attached", metav1.DeleteOptions{})
	})
	before := e.getVolume("attached").ResourceVersion

	out, err := e.releaseTo("attached", "heir", time.Second)
	var refused *checkup.RefusedError
	if !errors.As(err, &refused) || refused.Decision.Refusal != doctor.RefuseAttached ||
		!strings.Contains(err.Error(), "VolumeAttachment doctor-still-attached attaches it to node "+stack.CP.Nodes[0]) {
		t.Fatalf("got %v (%q), want an attached refusal", err, out)
	}
	if after := e.getVolume("attached").ResourceVersion; after != before {
		t.Errorf("a refused release wrote the volume (resourceVersion %s → %s)", before, after)
	}
}
