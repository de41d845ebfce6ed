package binding_test

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

// vev is an expected event with its target.
type vev struct {
	on          binding.Target
	typ, reason string
	msg         string
}

type volumeCase struct {
	name    string
	in      binding.VolumeInput
	action  binding.VolumeAction
	phase   v1.PersistentVolumePhase
	reclaim binding.Reclaim
	events  []vev
}

func provisionedBy(name string) pvOpt { return withAnn(storagehelpers.AnnDynamicallyProvisioned, name) }
func controllerBound() pvOpt          { return withAnn(storagehelpers.AnnBoundByController, "yes") }

func TestDecideVolumeBinding(t *testing.T) {
	bound := func(opts ...pvOpt) *v1.PersistentVolume {
		return newPV("pv1", "1Gi", append([]pvOpt{boundTo("default", "c"), withPhase(v1.VolumeBound)}, opts...)...)
	}
	runVolume(t, []volumeCase{
		{name: "no claimRef: Available", in: binding.VolumeInput{Volume: newPV("pv1", "1Gi", withPhase(v1.VolumePending))},
			phase: v1.VolumeAvailable},
		{name: "pre-bound by name: Available until its claim binds", in: binding.VolumeInput{Volume: newPV("pv1", "1Gi", preBoundTo("default", "c"))},
			phase: v1.VolumeAvailable},
		{name: "claim missing from the cache: ask the API server first", in: binding.VolumeInput{Volume: bound()},
			action: binding.VolumeCheckLive},
		{name: "cached claim has another UID: ask the API server first",
			in:     binding.VolumeInput{Volume: bound(), Claim: newClaim("c", "1Gi", func(c *v1.PersistentVolumeClaim) { c.UID = "new" })},
			action: binding.VolumeCheckLive},
		{name: "claim exists but has not picked the volume yet: nudge it",
			in:     binding.VolumeInput{Volume: bound(), Claim: newClaim("c", "1Gi")},
			action: binding.VolumeNudgeClaim},
		{name: "claim with another volume mode: explain on both objects",
			in: binding.VolumeInput{Volume: bound(withBlock()), Claim: newClaim("c", "1Gi")},
			events: []vev{
				{binding.OnVolume, warning, "VolumeMismatch", `Cannot bind PersistentVolume to requested PersistentVolumeClaim "c" due to incompatible volumeMode.`},
				{binding.OnClaim, warning, "VolumeMismatch", `Cannot bind PersistentVolume "pv1" to requested PersistentVolumeClaim due to incompatible volumeMode.`},
			}},
		{name: "claim points at the volume and is Bound: Bound",
			in:    binding.VolumeInput{Volume: bound(withPhase(v1.VolumeAvailable)), Claim: newClaim("c", "1Gi", claimVolume("pv1"), claimPhase(v1.ClaimBound))},
			phase: v1.VolumeBound},
		{name: "claim points at the volume but is not Bound yet: Bound, and the claim's sync finishes its side",
			in:     binding.VolumeInput{Volume: bound(withPhase(v1.VolumeAvailable)), Claim: newClaim("c", "1Gi", claimVolume("pv1"))},
			action: binding.VolumeNudgeClaim, phase: v1.VolumeBound},
		{name: "a Lost claim's volume came back pointing at it: Bound, and the claim is woken to be Bound again",
			in: binding.VolumeInput{Volume: bound(withPhase(v1.VolumePending)),
				Claim: newClaim("c", "1Gi", claimVolume("pv1"), bindCompleted(), claimPhase(v1.ClaimLost))},
			action: binding.VolumeNudgeClaim, phase: v1.VolumeBound},
		{name: "claim bound elsewhere, volume bound by the controller: unbind",
			in:     binding.VolumeInput{Volume: bound(controllerBound()), Claim: newClaim("c", "1Gi", claimVolume("pv2"))},
			action: binding.VolumeUnbind, phase: v1.VolumeAvailable},
		{name: "claim bound elsewhere, volume pre-bound by the user: unbind (keeps the name)",
			in:     binding.VolumeInput{Volume: bound(), Claim: newClaim("c", "1Gi", claimVolume("pv2"))},
			action: binding.VolumeUnbind, phase: v1.VolumeAvailable},
		{name: "claim bound elsewhere, provisioned for it with Delete: release and delete",
			in: binding.VolumeInput{Volume: bound(provisionedBy("csi.example.com"), withPolicy(v1.PersistentVolumeReclaimDelete)),
				Claim: newClaim("c", "1Gi", claimVolume("pv2"))},
			phase: v1.VolumeReleased, reclaim: binding.ReclaimExternal},
		{name: "claim bound elsewhere, provisioned but Retain: unbind",
			in:     binding.VolumeInput{Volume: bound(provisionedBy("csi.example.com"), controllerBound()), Claim: newClaim("c", "1Gi", claimVolume("pv2"))},
			action: binding.VolumeUnbind, phase: v1.VolumeAvailable},
	})
}

func TestDecideVolumeReclaim(t *testing.T) {
	gone := func(opts ...pvOpt) binding.VolumeInput {
		pv := newPV("pv1", "1Gi", append([]pvOpt{boundTo("default", "c"), withPhase(v1.VolumeBound)}, opts...)...)
		return binding.VolumeInput{Volume: pv, LiveChecked: true}
	}
	deletePolicy := withPolicy(v1.PersistentVolumeReclaimDelete)
	recyclePolicy := withPolicy(v1.PersistentVolumeReclaimRecycle)
	withPods := func(in binding.VolumeInput, pods ...*v1.Pod) binding.VolumeInput { in.Pods = pods; return in }
	runVolume(t, []volumeCase{
		{name: "Retain: Released and kept", in: gone(), phase: v1.VolumeReleased, reclaim: binding.ReclaimRetain},
		{name: "an already Released volume is not re-checked live nor re-written",
			in:      binding.VolumeInput{Volume: newPV("pv1", "1Gi", boundTo("default", "c"), withPhase(v1.VolumeReleased))},
			reclaim: binding.ReclaimRetain},
		{name: "the claim was re-created under the same name: the old binding is released",
			in: binding.VolumeInput{Volume: newPV("pv1", "1Gi", boundToUID("default", "c", types.UID("old"))),
				Claim: newClaim("c", "1Gi"), LiveChecked: true},
			phase: v1.VolumeReleased, reclaim: binding.ReclaimRetain},
		{name: "Delete of a CSI volume is left to the CSI provisioner", in: gone(deletePolicy, withCSI("csi.example.com")),
			phase: v1.VolumeReleased, reclaim: binding.ReclaimExternal},
		{name: "Delete of an externally provisioned volume is left to its provisioner", in: gone(deletePolicy, provisionedBy("nfs.example.com/x")),
			phase: v1.VolumeReleased, reclaim: binding.ReclaimExternal},
		{name: "Delete of an in-tree provisioned volume fails: no in-tree plugins",
			in:    gone(deletePolicy, provisionedBy("kubernetes.io/aws-ebs")),
			phase: v1.VolumeFailed, reclaim: binding.ReclaimFailed,
			events: []vev{{binding.OnVolume, warning, "VolumeFailedDelete", "no volume plugin matched name: kubernetes.io/aws-ebs"}}},
		{name: "Delete of a static non-CSI volume fails",
			in:    gone(deletePolicy),
			phase: v1.VolumeFailed, reclaim: binding.ReclaimFailed,
			events: []vev{{binding.OnVolume, warning, "VolumeFailedDelete", `error getting deleter volume plugin for volume "pv1": no volume plugin matched`}}},
		{name: "a migrated volume is left to its CSI driver", in: gone(deletePolicy, withAnn(storagehelpers.AnnMigratedTo, "ebs.csi.aws.com")),
			phase: v1.VolumeReleased, reclaim: binding.ReclaimMigrated},
		{name: "Recycle when no pod uses the claim", in: withPods(gone(recyclePolicy), newPod("old", podSucceeded())),
			action: binding.VolumeRecycle, phase: v1.VolumeReleased, reclaim: binding.ReclaimRecycle},
		{name: "Recycle waits while a pod still uses the claim",
			in:    withPods(gone(recyclePolicy), newPod("web-1"), newPod("web-0")),
			phase: v1.VolumeReleased, reclaim: binding.ReclaimRecycleBlocked,
			events: []vev{{binding.OnVolume, normal, "VolumeFailedRecycle", "Volume is used by pods: default/web-0,default/web-1"}}},
		{name: "unknown policy: Failed with a warning",
			in:    gone(withPolicy("Shred")),
			phase: v1.VolumeFailed, reclaim: binding.ReclaimFailed,
			events: []vev{{binding.OnVolume, warning, "VolumeUnknownReclaimPolicy", "Volume has unrecognized PersistentVolumeReclaimPolicy"}}},
		{name: "unknown policy on a Failed volume: no second warning",
			in:      gone(withPolicy("Shred"), withPhase(v1.VolumeFailed)),
			reclaim: binding.ReclaimFailed},
	})
}

func runVolume(t *testing.T, cases []volumeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := binding.DecideVolume(tc.in)
			if d.Action != tc.action || d.Phase != tc.phase || d.Reclaim != tc.reclaim {
				t.Errorf("decision %s; want %s phase=%q reclaim=%s", d, tc.action, tc.phase, tc.reclaim)
			}
			var got []vev
			for _, e := range d.Events {
				got = append(got, vev{e.On, e.Type, e.Reason, e.Message})
			}
			if !reflect.DeepEqual(got, tc.events) {
				t.Errorf("events\n got %v\nwant %v", got, tc.events)
			}
		})
	}
}

func TestFailedVolumeKeepsTheEventMessageAsStatus(t *testing.T) {
	pv := newPV("pv1", "1Gi", boundTo("default", "c"), withPolicy("Shred"))
	d := binding.DecideVolume(binding.VolumeInput{Volume: pv, LiveChecked: true})
	if d.Message != binding.MsgUnknownReclaimPolicy {
		t.Errorf("status message %q, want %q", d.Message, binding.MsgUnknownReclaimPolicy)
	}
}
