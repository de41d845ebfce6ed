package provisioner

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
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
		want     claimAction
	}{
		{"pending, handed to us", claim(), class(), false, claimProvision},
		{"phase not yet written", claim(func(c *v1.PersistentVolumeClaim) { c.Status.Phase = "" }), class(), false, claimProvision},
		{"beta annotation only", claim(func(c *v1.PersistentVolumeClaim) { delete(c.Annotations, volumehelpers.AnnStorageProvisioner) }), class(), false, claimProvision},
		{"another driver", claim(func(c *v1.PersistentVolumeClaim) {
			c.Annotations = map[string]string{volumehelpers.AnnStorageProvisioner: "other"}
		}), class(), false, claimNone},
		{"not handed over yet", claim(func(c *v1.PersistentVolumeClaim) { c.Annotations = nil }), class(), false, claimNone},
		{"class missing", claim(), nil, false, claimNone},
		{"class of another provisioner", claim(), class(func(c *storagev1.StorageClass) { c.Provisioner = "other" }), false, claimNone},
		{"wait for first consumer, no node yet", claim(), class(waitForConsumer), false, claimNone},
		{"wait for first consumer, node selected", claim(selectedNode("a")), class(waitForConsumer), false, claimProvision},
		{"bound", claim(func(c *v1.PersistentVolumeClaim) { c.Status.Phase = v1.ClaimBound }), class(), false, claimNone},
		{"has a volume name", claim(func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "static" }), class(), false, claimNone},
		{"PV already made", claim(), class(), true, claimNone},
		{"in progress, PV made", claim(withFinalizer), class(), true, claimFinish},
		{"in progress, PV made, claim deleted", claim(withFinalizer, deleting), class(), true, claimFinish},
		{"in progress, no PV, claim deleted", claim(withFinalizer, deleting), class(), false, claimCleanup},
		{"in progress, no PV, class gone, claim deleted", claim(withFinalizer, deleting), nil, false, claimCleanup},
		{"in progress, bound to a static PV", claim(withFinalizer, func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "static" }), class(), false, claimCleanup},
		{"in progress, retry", claim(withFinalizer), class(), false, claimProvision},
		{"in progress, waiting for a node again", claim(withFinalizer), class(waitForConsumer), false, claimNone},
		{"deleted, never started", claim(deleting), class(), false, claimNone},
	}
	for _, tc := range cases {
		got := decideClaim(claimFacts{claim: tc.claim, class: tc.class, pvExists: tc.pvExists, serves: serves})
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
		want volumeAction
	}{
		{"released, delete", pv(), volumeDelete},
		{"released, delete, PV deleted, finalizer left", pv(gone), volumeDelete},
		{"released, delete, PV deleted, finalizer gone", pv(gone, noFinalizer), volumeNone},
		{"released, delete, no finalizer", pv(noFinalizer), volumeDelete},
		{"bound", pv(phase(v1.VolumeBound)), volumeNone},
		{"retain with our finalizer", pv(retain), volumeUnfinalize},
		{"retain released", pv(retain, noFinalizer), volumeNone},
		{"recycle with our finalizer", pv(func(p *v1.PersistentVolume) { p.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRecycle }), volumeUnfinalize},
		{"bound, delete again, no finalizer: back", pv(phase(v1.VolumeBound), noFinalizer), volumeFinalize},
		{"bound, delete, no finalizer, being deleted", pv(phase(v1.VolumeBound), noFinalizer, gone), volumeNone},
		{"available, delete, no finalizer", pv(phase(v1.VolumeAvailable), noFinalizer), volumeNone},
		{"bound, no finalizer, another driver's", pv(phase(v1.VolumeBound), noFinalizer, func(p *v1.PersistentVolume) {
			p.Annotations[volumehelpers.AnnDynamicallyProvisioned] = "other"
		}), volumeNone},
		{"not provisioned by us", pv(func(p *v1.PersistentVolume) { p.Annotations = nil }), volumeNone},
		{"another driver's", pv(func(p *v1.PersistentVolume) {
			p.Annotations[volumehelpers.AnnDynamicallyProvisioned] = "other"
			p.Spec.CSI.Driver = "other"
		}), volumeNone},
		{"not CSI", pv(func(p *v1.PersistentVolume) { p.Spec.CSI = nil }), volumeNone},
	}
	for _, tc := range cases {
		if got := decideVolume(tc.pv, serves); got != tc.want {
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
		if got := populatorKind(c); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	populated := claim(selectedNode("a"), func(c *v1.PersistentVolumeClaim) { c.Spec.DataSourceRef = ref("Backup", "example.io") })
	if got := decideClaim(claimFacts{claim: populated, class: class(waitForConsumer), serves: func(string) bool { return true }}); got != claimPopulator {
		t.Errorf("populated claim: %s, want %s", got, claimPopulator)
	}
}

// What a failure changes on the claim, per error and claim; the
// ResourceExhausted rows are the external-provisioner's checkError.
func TestFailureOutcome(t *testing.T) {
	exhausted := status.Error(codes.ResourceExhausted, "full")
	cases := []struct {
		name string
		got  failureOutcome
		want failureOutcome
	}{
		{"out of room, selected node, topology: reschedule", afterCreate(exhausted, claim(selectedNode("a")), true), failureOutcome{unpin: true, reschedule: true}},
		{"out of room, selected node, no topology: retry here", afterCreate(exhausted, claim(selectedNode("a")), false), failureOutcome{unpin: true}},
		{"out of room, no node: retry", afterCreate(exhausted, claim(), true), failureOutcome{unpin: true}},
		{"timeout: the driver may still be working", afterCreate(status.Error(codes.DeadlineExceeded, ""), claim(selectedNode("a")), true), failureOutcome{}},
		{"not a gRPC error: may be running", afterCreate(errors.New("broken pipe"), claim(selectedNode("a")), true), failureOutcome{}},
		{"refused for good on a selected node", afterCreate(status.Error(codes.InvalidArgument, ""), claim(selectedNode("a")), true), failureOutcome{unpin: true, reschedule: true}},
		{"selector: nothing to reschedule", beforeCreate(refusal(claim(withSelector)), claim(selectedNode("a"), withSelector)), failureOutcome{}},
		{"final before create: reschedule, keep any pin", beforeCreate(final(errors.New("x")), claim(selectedNode("a"))), failureOutcome{reschedule: true}},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
	if err := refusal(claim(withSelector)); err == nil || err.Error() != "claim Selector is not supported" {
		t.Errorf("selector refusal %v", err)
	}
}

func withSelector(c *v1.PersistentVolumeClaim) {
	c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
}
