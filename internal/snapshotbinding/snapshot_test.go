package snapshotbinding

import (
	"slices"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

func TestDynamicSnapshotCreatesItsContent(t *testing.T) {
	s := dyn("snap", withClass("snaps"))
	f := facts(s, nil)
	f.Classes[0].Parameters = map[string]string{snapshotapi.SecretNameParameter: "creds-${volumesnapshot.name}",
		snapshotapi.SecretNamespaceParameter: "${volumesnapshot.namespace}"}
	p := DecideSnapshot(f)
	if p.Reason != CreateContent || p.Create == nil || p.Retry != nil {
		t.Fatalf("plan %+v: want the content created", p)
	}
	c := p.Create
	if c.Name != "snapcontent-uid-snap" || *c.Spec.Source.VolumeHandle != "vol-1" || c.Spec.Driver != driver ||
		*c.Spec.VolumeSnapshotClassName != "snaps" || c.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentDelete ||
		*c.Spec.SourceVolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("content %+v", c)
	}
	r := c.Spec.VolumeSnapshotRef
	if r.Kind != "VolumeSnapshot" || r.APIVersion != "snapshot.storage.k8s.io/v1" || r.Namespace != ns || r.Name != "snap" || r.UID != s.UID {
		t.Errorf("ref %+v", r)
	}
	if c.Annotations[snapshotapi.DeletionSecretName] != "creds-snap" || c.Annotations[snapshotapi.DeletionSecretNamespace] != ns {
		t.Errorf("annotations %v", c.Annotations)
	}
	if !slices.Equal(p.AddFinalizers, []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}) {
		t.Errorf("finalizers %v", p.AddFinalizers)
	}
	if !slices.Equal(c.Finalizers, []string{snapshotapi.ContentFinalizer}) {
		t.Errorf("content finalizers %v, want it born protected", c.Finalizers)
	}
	if p.Claim != ClaimAddFinalizer {
		t.Errorf("claim step %v, want the claim protected", p.Claim)
	}
	if p.Status == nil || *p.Status.BoundVolumeSnapshotContentName != c.Name || *p.Status.ReadyToUse {
		t.Errorf("status %+v", p.Status)
	}
	if got := reasons(p.Events); !slices.Equal(got, []string{"CreatingSnapshot"}) || p.Events[0].Message != "Waiting for a snapshot team-a/snap to be created by the CSI driver." {
		t.Errorf("events %+v", p.Events)
	}
}

func TestDefaultClass(t *testing.T) {
	for _, tc := range []struct {
		name    string
		classes []*snapv1.VolumeSnapshotClass
		set     string
		err     string
	}{
		{"one default of the driver", []*snapv1.VolumeSnapshotClass{class("a", driver, false, nil), class("b", driver, true, nil), class("c", "other", true, nil)}, "b", ""},
		{"none", []*snapv1.VolumeSnapshotClass{class("a", driver, false, nil), class("c", "other", true, nil)}, "", "Failed to set default snapshot class with error cannot find default snapshot class"},
		{"two", []*snapv1.VolumeSnapshotClass{class("a", driver, true, nil), class("b", driver, true, nil)}, "", "Failed to set default snapshot class with error 2 default snapshot classes were found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := facts(dyn("snap"), nil)
			f.Classes = tc.classes
			p := DecideSnapshot(f)
			if p.SetClass != tc.set {
				t.Errorf("SetClass %q, want %q", p.SetClass, tc.set)
			}
			if tc.err == "" {
				if p.Create == nil || *p.Create.Spec.VolumeSnapshotClassName != tc.set {
					t.Errorf("plan %+v: want the content of class %s", p, tc.set)
				}
				return
			}
			if p.Retry == nil || p.Create != nil || p.Status == nil || *p.Status.Error.Message != tc.err || p.Status.ReadyToUse != nil {
				t.Errorf("plan %+v, want error %q without readyToUse", p, tc.err)
			}
			if got := reasons(p.Events); !slices.Equal(got, []string{"SetDefaultSnapshotClassFailed"}) {
				t.Errorf("events %v", got)
			}
			if p.Claim != ClaimKeep {
				t.Errorf("claim step %v: a snapshot that cannot be made must not take its claim", p.Claim)
			}
		})
	}
}

func TestDynamicSnapshotWaits(t *testing.T) {
	otherNS := claim(func(c *corev1.PersistentVolumeClaim) { c.Namespace = "team-b" })
	for _, tc := range []struct {
		name   string
		change func(*SnapshotFacts)
		reason Reason
		msg    string
	}{
		{"named class missing", func(f *SnapshotFacts) { f.Snapshot.Spec.VolumeSnapshotClassName = ptr.To("gone") }, NoClass,
			`Failed to get snapshot class with error volumesnapshotclass.snapshot.storage.k8s.io "gone" not found`},
		{"claim unbound", func(f *SnapshotFacts) { f.Claim.Status.Phase = corev1.ClaimPending }, WaitingForSource,
			`the PVC data is not yet bound to a PV, will not attempt to take a snapshot`},
		{"claim of another namespace is never used", func(f *SnapshotFacts) { f.Claim = otherNS }, WaitingForSource, `persistentvolumeclaim`},
		{"volume bound to another claim", func(f *SnapshotFacts) { f.Volume.Spec.ClaimRef.UID = "other" }, WaitingForSource,
			`claim in dataSource not bound or invalid`},
		{"claim being deleted (external-snapshotter #349)", func(f *SnapshotFacts) {
			f.Claim.DeletionTimestamp = &metav1.Time{Time: now}
		}, ClaimDeleting, "cannot add finalizer on claim because it is being deleted"},
		{"bad secret template", func(f *SnapshotFacts) {
			f.Classes[0].Parameters = map[string]string{snapshotapi.SecretNameParameter: "${pvc.name}", snapshotapi.SecretNamespaceParameter: "x"}
		}, WaitingForSource, `invalid tokens`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := facts(dyn("snap", withClass("snaps")), nil)
			tc.change(&f)
			p := DecideSnapshot(f)
			if p.Reason != tc.reason || p.Create != nil || p.Retry == nil {
				t.Fatalf("plan %+v: want %s, nothing created, retried", p, tc.reason)
			}
			if p.Status == nil || !strings.Contains(*p.Status.Error.Message, tc.msg) {
				t.Errorf("status %+v, want error containing %q", p.Status, tc.msg)
			}
			if p.Claim == ClaimAddFinalizer {
				t.Errorf("the claim is protected for a snapshot that cannot be made")
			}
		})
	}
}

func TestSameErrorIsNotWrittenTwice(t *testing.T) {
	f := facts(dyn("snap", withClass("snaps")), nil)
	f.Claim.Status.Phase = corev1.ClaimPending
	first := DecideSnapshot(f)
	f.Snapshot.Status = first.Status
	f.Snapshot.Finalizers = first.AddFinalizers
	second := DecideSnapshot(f)
	if second.Status != nil || len(second.Events) != 0 || second.Retry == nil {
		t.Errorf("second plan %+v: want no write, no event, a retry", second)
	}
}

func TestDynamicSnapshotMirrorsItsContent(t *testing.T) {
	s := dyn("snap", withClass("snaps"), withFinalizers(snapshotapi.AsSourceFinalizer), boundTo("snapcontent-uid-snap", false))
	c := withStatus(dynContent(s), true, now.UnixNano(), 1<<20)
	f := facts(s, c)
	f.Claim.Finalizers = []string{snapshotapi.ClaimFinalizer}
	p := DecideSnapshot(f)
	if p.Reason != Mirrored || p.Status == nil || !*p.Status.ReadyToUse || p.Status.RestoreSize.Value() != 1<<20 || !p.Status.CreationTime.Time.Equal(now) {
		t.Fatalf("plan %+v status %+v", p, p.Status)
	}
	if got := reasons(p.Events); !slices.Equal(got, []string{"SnapshotCreated", "SnapshotReady"}) {
		t.Errorf("events %v", got)
	}
	if !slices.Equal(p.AddFinalizers, []string{snapshotapi.BoundFinalizer}) {
		t.Errorf("finalizers %v: want the bound one (Delete)", p.AddFinalizers)
	}
	if p.Claim != ClaimRemoveFinalizer {
		t.Errorf("claim step %v: a ready snapshot releases its claim", p.Claim)
	}
	// Once mirrored: nothing.
	s.Status, s.Finalizers = p.Status, append(s.Finalizers, p.AddFinalizers...)
	f.Claim.Finalizers = nil
	if p := DecideSnapshot(f); p.Reason != InSync || p.Status != nil || len(p.Events) != 0 || p.Claim != ClaimKeep {
		t.Errorf("second plan %+v", p)
	}
}

func TestDynamicSnapshotRefusesAForeignContent(t *testing.T) {
	s := dyn("snap", withClass("snaps"))
	for _, tc := range []struct {
		name   string
		mutate func(*snapv1.VolumeSnapshotContent)
		event  string
	}{
		{"points at another namespace", func(c *snapv1.VolumeSnapshotContent) { c.Spec.VolumeSnapshotRef.Namespace = "team-b" }, "SnapshotContentMisbound"},
		{"points at another uid", func(c *snapv1.VolumeSnapshotContent) { c.Spec.VolumeSnapshotRef.UID = "old" }, "SnapshotContentMisbound"},
		{"pre-provisioned", func(c *snapv1.VolumeSnapshotContent) {
			c.Spec.Source = snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To("h")}
		}, "SnapshotContentMismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dynContent(s)
			tc.mutate(c)
			p := DecideSnapshot(facts(s, c))
			if p.Create != nil || p.Bind != nil || p.Retry == nil || p.Status == nil || p.Status.BoundVolumeSnapshotContentName != nil {
				t.Errorf("plan %+v: want no binding", p)
			}
			if got := reasons(p.Events); !slices.Equal(got, []string{tc.event}) {
				t.Errorf("events %v", got)
			}
		})
	}
}

// A status naming another content (the status is writable by the user in
// some clusters) is never followed.
func TestStatusNamingAnotherContentIsNotTrusted(t *testing.T) {
	victim := preContent("victim", "team-b", "theirs", "uid-theirs")
	s := dyn("snap", withClass("snaps"), boundTo("victim", true))
	p := DecideSnapshot(facts(s, nil))
	if p.Create != nil || p.Reason != Misbound || !slices.Equal(reasons(p.Events), []string{"SnapshotMisbound"}) {
		t.Errorf("plan %+v", p)
	}
	deleting(s)
	s.Finalizers = []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}
	f := facts(s, nil) // the loop reads only the designated content
	if p := DecideSnapshot(f); p.MarkBeingDeleted || p.DeleteContent {
		t.Errorf("plan %+v acts on a content", p)
	}
	f.Content = victim // even if handed the victim, it does not point back
	if p := DecideSnapshot(f); p.MarkBeingDeleted || p.DeleteContent {
		t.Errorf("plan %+v acts on another namespace's content", p)
	}
}

func TestValidation(t *testing.T) {
	s := dyn("snap")
	s.Spec.Source.VolumeSnapshotContentName = ptr.To("c")
	p := DecideSnapshot(facts(s, nil))
	if p.Reason != Invalid || p.Retry != nil || !slices.Equal(reasons(p.Events), []string{"SnapshotValidationError"}) ||
		*p.Status.Error.Message != "Exactly one of PersistentVolumeClaimName and VolumeSnapshotContentName should be specified" {
		t.Errorf("plan %+v", p)
	}
}

// HeldBy: a member's group owner holds it by name and UID; a namesake with
// another UID does not; a member by its status alone is held by name.
func TestHeldByMatchesTheOwnersUID(t *testing.T) {
	owned := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: snapshotapi.GroupSnapshotGroup + "/v1", Kind: "VolumeGroupSnapshot", Name: "grp", UID: "g1"}}}}
	byStatus := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"},
		Status: &snapv1.VolumeSnapshotStatus{VolumeGroupSnapshotName: ptr.To("grp")}}
	for _, c := range []struct {
		s         *snapv1.VolumeSnapshot
		name, uid string
		want      bool
	}{
		{owned, "grp", "g1", true},
		{owned, "grp", "g2", false},
		{owned, "other", "g1", false},
		{byStatus, "grp", "g9", true},
		{byStatus, "other", "g9", false},
		{&snapv1.VolumeSnapshot{}, "", "", false},
	} {
		if got := HeldBy(c.s, c.name, types.UID(c.uid)); got != c.want {
			t.Errorf("HeldBy(%s owners %v, %s, %s) = %v, want %v", c.s.Name, c.s.OwnerReferences, c.name, c.uid, got, c.want)
		}
	}
}
