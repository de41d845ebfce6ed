package provisioning

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

func TestDecideClaim(t *testing.T) {
	serves := func(d string) bool { return d == testDriver }
	cases := []struct {
		name     string
		claim    *v1.PersistentVolumeClaim
		class    *storagev1.StorageClass
		pvExists bool
		want     ClaimAction
	}{
		{"pending, handed to us", claim(), class(), false, ClaimProvision},
		{"phase not yet written", claim(func(c *v1.PersistentVolumeClaim) { c.Status.Phase = "" }), class(), false, ClaimProvision},
		{"beta annotation only", claim(func(c *v1.PersistentVolumeClaim) { delete(c.Annotations, volumehelpers.AnnStorageProvisioner) }), class(), false, ClaimProvision},
		{"another driver", claim(func(c *v1.PersistentVolumeClaim) {
			c.Annotations = map[string]string{volumehelpers.AnnStorageProvisioner: "other"}
		}), class(), false, ClaimNone},
		{"not handed over yet", claim(func(c *v1.PersistentVolumeClaim) { c.Annotations = nil }), class(), false, ClaimNone},
		{"class missing", claim(), nil, false, ClaimNone},
		{"class of another provisioner", claim(), class(func(c *storagev1.StorageClass) { c.Provisioner = "other" }), false, ClaimNone},
		{"wait for first consumer, no node yet", claim(), class(waitForConsumer), false, ClaimNone},
		{"wait for first consumer, node selected", claim(selectedNode("a")), class(waitForConsumer), false, ClaimProvision},
		{"bound", claim(func(c *v1.PersistentVolumeClaim) { c.Status.Phase = v1.ClaimBound }), class(), false, ClaimNone},
		{"has a volume name", claim(func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "static" }), class(), false, ClaimNone},
		{"PV already made", claim(), class(), true, ClaimNone},
		{"in progress, PV made", claim(withFinalizer), class(), true, ClaimFinish},
		{"in progress, PV made, claim deleted", claim(withFinalizer, deleting), class(), true, ClaimFinish},
		{"in progress, no PV, claim deleted", claim(withFinalizer, deleting), class(), false, ClaimCleanup},
		{"in progress, no PV, class gone, claim deleted", claim(withFinalizer, deleting), nil, false, ClaimCleanup},
		{"in progress, bound to a static PV", claim(withFinalizer, func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "static" }), class(), false, ClaimCleanup},
		{"in progress, retry", claim(withFinalizer), class(), false, ClaimProvision},
		{"in progress, waiting for a node again", claim(withFinalizer), class(waitForConsumer), false, ClaimNone},
		{"deleted, never started", claim(deleting), class(), false, ClaimNone},
	}
	for _, tc := range cases {
		got := DecideClaim(ClaimFacts{Claim: tc.claim, Class: tc.class, PVExists: tc.pvExists, Serves: serves})
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestDecideVolume(t *testing.T) {
	serves := func(d string) bool { return d == testDriver }
	pv := func(mods ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
		p := &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Finalizers: []string{VolumeFinalizer},
				Annotations: map[string]string{volumehelpers.AnnDynamicallyProvisioned: testDriver}},
			Spec: v1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
				PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: "h"}}},
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeReleased},
		}
		for _, m := range mods {
			m(p)
		}
		return p
	}
	phase := func(ph v1.PersistentVolumePhase) func(*v1.PersistentVolume) {
		return func(p *v1.PersistentVolume) { p.Status.Phase = ph }
	}
	retain := func(p *v1.PersistentVolume) { p.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain }
	noFinalizer := func(p *v1.PersistentVolume) { p.Finalizers = nil }
	gone := func(p *v1.PersistentVolume) { p.DeletionTimestamp = &metav1.Time{} }
	cases := []struct {
		name string
		pv   *v1.PersistentVolume
		want VolumeAction
	}{
		{"released, delete", pv(), VolumeDelete},
		{"released, delete, PV deleted, finalizer left", pv(gone), VolumeDelete},
		{"released, delete, PV deleted, finalizer gone", pv(gone, noFinalizer), VolumeNone},
		{"released, delete, no finalizer", pv(noFinalizer), VolumeDelete},
		{"bound", pv(phase(v1.VolumeBound)), VolumeNone},
		{"retain with our finalizer", pv(retain), VolumeUnfinalize},
		{"retain released", pv(retain, noFinalizer), VolumeNone},
		{"recycle with our finalizer", pv(func(p *v1.PersistentVolume) { p.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRecycle }), VolumeUnfinalize},
		{"bound, delete again, no finalizer: back", pv(phase(v1.VolumeBound), noFinalizer), VolumeFinalize},
		{"bound, delete, no finalizer, being deleted", pv(phase(v1.VolumeBound), noFinalizer, gone), VolumeNone},
		{"available, delete, no finalizer", pv(phase(v1.VolumeAvailable), noFinalizer), VolumeNone},
		{"bound, no finalizer, another driver's", pv(phase(v1.VolumeBound), noFinalizer, func(p *v1.PersistentVolume) {
			p.Annotations[volumehelpers.AnnDynamicallyProvisioned] = "other"
		}), VolumeNone},
		{"not provisioned by us", pv(func(p *v1.PersistentVolume) { p.Annotations = nil }), VolumeNone},
		{"another driver's", pv(func(p *v1.PersistentVolume) {
			p.Annotations[volumehelpers.AnnDynamicallyProvisioned] = "other"
			p.Spec.CSI.Driver = "other"
		}), VolumeNone},
		{"not CSI", pv(func(p *v1.PersistentVolume) { p.Spec.CSI = nil }), VolumeNone},
	}
	for _, tc := range cases {
		if got := DecideVolume(tc.pv, serves); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Which data sources are a populator's, as the external-provisioner's
// prepareProvision tells: only the kind counts, and dataSource wins over
// dataSourceRef.
func TestPopulatorKind(t *testing.T) {
	ref := func(kind, group string) *v1.TypedObjectReference {
		return &v1.TypedObjectReference{Kind: kind, Name: "src", APIGroup: &group}
	}
	local := func(kind string) *v1.TypedLocalObjectReference {
		return &v1.TypedLocalObjectReference{Kind: kind, Name: "src"}
	}
	cases := []struct {
		name string
		src  *v1.TypedLocalObjectReference
		ref  *v1.TypedObjectReference
		want string
	}{
		{"no source", nil, nil, ""},
		{"clone", local("PersistentVolumeClaim"), nil, ""},
		{"snapshot", nil, ref("VolumeSnapshot", "snapshot.storage.k8s.io"), ""},
		{"snapshot of another group is still no populator's", nil, ref("VolumeSnapshot", "example.io"), ""},
		{"populator in dataSourceRef", nil, ref("Backup", "example.io"), "Backup"},
		{"populator in dataSource", local("Backup"), nil, "Backup"},
		{"dataSource wins", local("PersistentVolumeClaim"), ref("Backup", "example.io"), ""},
	}
	for _, tc := range cases {
		c := claim(func(c *v1.PersistentVolumeClaim) { c.Spec.DataSource, c.Spec.DataSourceRef = tc.src, tc.ref })
		if got := PopulatorKind(c); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	populated := claim(selectedNode("a"), func(c *v1.PersistentVolumeClaim) { c.Spec.DataSourceRef = ref("Backup", "example.io") })
	if got := DecideClaim(ClaimFacts{Claim: populated, Class: class(waitForConsumer), Serves: func(string) bool { return true }}); got != ClaimPopulator {
		t.Errorf("populated claim: %s, want %s", got, ClaimPopulator)
	}
}

// What a failure changes on the claim, per error and claim; the
// ResourceExhausted rows are the external-provisioner's checkError.
func TestFailureOutcome(t *testing.T) {
	exhausted := status.Error(codes.ResourceExhausted, "full")
	cases := []struct {
		name string
		got  FailureOutcome
		want FailureOutcome
	}{
		{"out of room, selected node, topology: reschedule", AfterCreate(exhausted, claim(selectedNode("a")), true), FailureOutcome{Unpin: true, Reschedule: true}},
		{"out of room, selected node, no topology: retry here", AfterCreate(exhausted, claim(selectedNode("a")), false), FailureOutcome{Unpin: true}},
		{"out of room, no node: retry", AfterCreate(exhausted, claim(), true), FailureOutcome{Unpin: true}},
		{"timeout: the driver may still be working", AfterCreate(status.Error(codes.DeadlineExceeded, ""), claim(selectedNode("a")), true), FailureOutcome{}},
		{"not a gRPC error: may be running", AfterCreate(errors.New("broken pipe"), claim(selectedNode("a")), true), FailureOutcome{}},
		{"refused for good on a selected node", AfterCreate(status.Error(codes.InvalidArgument, ""), claim(selectedNode("a")), true), FailureOutcome{Unpin: true, Reschedule: true}},
		{"selector: nothing to reschedule", BeforeCreate(Refusal(claim(withSelector)), claim(selectedNode("a"), withSelector)), FailureOutcome{}},
		{"final before create: reschedule, keep any pin", BeforeCreate(Final(errors.New("x")), claim(selectedNode("a"))), FailureOutcome{Reschedule: true}},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
	if err := Refusal(claim(withSelector)); err == nil || err.Error() != "claim Selector is not supported" {
		t.Errorf("selector refusal %v", err)
	}
}

func withSelector(c *v1.PersistentVolumeClaim) {
	c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
}

// A failure's outcome changes the claim only where it has something to
// change: the selected node, the in-progress marks.
func TestAfterFailure(t *testing.T) {
	pinned := func(c *v1.PersistentVolumeClaim) { c.Annotations[AnnEndpointNode] = "a" }
	for _, tc := range []struct {
		name      string
		claim     *v1.PersistentVolumeClaim
		out       FailureOutcome
		unchanged bool
		selected  bool
		marked    bool
	}{
		{"nothing to do", claim(selectedNode("a"), withFinalizer), FailureOutcome{}, true, true, true},
		{"reschedule without a selected node", claim(), FailureOutcome{Reschedule: true}, true, false, false},
		{"unpin without marks", claim(selectedNode("a")), FailureOutcome{Unpin: true}, true, true, false},
		{"reschedule", claim(selectedNode("a"), withFinalizer), FailureOutcome{Reschedule: true}, false, false, true},
		{"unpin", claim(selectedNode("a"), withFinalizer, pinned), FailureOutcome{Unpin: true}, false, true, false},
		{"both", claim(selectedNode("a"), pinned), FailureOutcome{Unpin: true, Reschedule: true}, false, false, false},
	} {
		before := tc.claim.DeepCopy()
		upd := AfterFailure(tc.claim, tc.out)
		if !apiequality.Semantic.DeepEqual(before, tc.claim) {
			t.Errorf("%s: the claim itself was modified", tc.name)
		}
		if (upd == nil) != tc.unchanged {
			t.Errorf("%s: update %v, want unchanged %v", tc.name, upd, tc.unchanged)
			continue
		}
		if upd == nil {
			upd = tc.claim
		}
		if _, ok := upd.Annotations[volumehelpers.AnnSelectedNode]; ok != tc.selected {
			t.Errorf("%s: selected node kept %v, want %v", tc.name, ok, tc.selected)
		}
		if MarkedInProgress(upd) != tc.marked {
			t.Errorf("%s: marked %v, want %v", tc.name, MarkedInProgress(upd), tc.marked)
		}
	}
}
