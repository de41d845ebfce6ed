package binding_test

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/fuzzing"
)

// The fuzz targets of this file decode a claim, the volumes around it and
// the claim's annotations from fuzz bytes: everything a namespace user
// writes on a claim (class, beta class annotation, selector, access modes,
// size, volumeName, bind-completed, bound-by-controller, selected-node) is
// arbitrary, and the volumes point at this claim, at a namesake with
// another UID, or at other tenants' claims.

// fuzzWorld decodes up to six volumes (pv-0, pv-1, ...) and a claim.
func fuzzWorld(data []byte) (*v1.PersistentVolumeClaim, []*v1.PersistentVolume, *fuzzing.Input) {
	in := fuzzing.New(data)
	n := in.Intn(7)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("pv-%d", i)
	}
	claim := in.Claim(names)
	pvs := make([]*v1.PersistentVolume, n)
	for i, name := range names {
		pvs[i] = in.Volume(name)
	}
	return claim, pvs, in
}

// claimsOther says whether the volume is bound, by UID, to some other claim
// than this one: a volume no decision may ever give to this claim.
func claimsOther(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return false
	}
	if ref.UID == "" {
		return !binding.IsBoundToClaim(pv, claim)
	}
	return ref.UID != claim.UID
}

// ceil is q rounded up to whole bytes, the unit sizes are compared in.
func ceil(q resource.Quantity) resource.Quantity {
	q = q.DeepCopy()
	q.RoundUp(0)
	return q
}

// tooSmall: the volume holds fewer bytes than the claim requests.
func tooSmall(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) bool {
	capacity, request := ceil(binding.Capacity(pv)), ceil(claim.Spec.Resources.Requests[v1.ResourceStorage])
	return capacity.Cmp(request) < 0
}

func seedWorlds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2})
	f.Add([]byte("\x05\x01\x01\x00\x02\x01\x00\x00\x00\x01\x05\x00\x00\x00\x00\x02\x00\x01\x00\x00\x00\x00\x00\x02\x01\x00"))
}

// FuzzMatch: whatever the claim and the volumes, Match never panics, chooses
// a volume that fits (Check says so, it is large enough and not bound to
// another claim), gives every other candidate exactly one verdict sorted by
// name, and chooses the same volume whatever the candidates' order.
func FuzzMatch(f *testing.F) {
	seedWorlds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		claim, pvs, in := fuzzWorld(data)
		delay := in.Bool()
		chosen, verdicts := binding.Match(claim, pvs, delay)
		want := len(pvs)
		if chosen != nil {
			want--
			if !slices.Contains(pvs, chosen) {
				t.Fatalf("chose %s, not a candidate", chosen.Name)
			}
			if r := binding.Check(claim, chosen, delay); r != binding.ReasonNone {
				t.Fatalf("chose %s, which Check rejects: %s", chosen.Name, r)
			}
			if claimsOther(chosen, claim) {
				t.Fatalf("chose %s, whose claimRef %+v names another claim than %s (uid %s)", chosen.Name, chosen.Spec.ClaimRef, binding.ClaimKey(claim), claim.UID)
			}
			if tooSmall(chosen, claim) || chosen.DeletionTimestamp != nil {
				t.Fatalf("chose %s: too small or being deleted", chosen.Name)
			}
		}
		if len(verdicts) != want {
			t.Fatalf("%d verdicts for %d candidates, chosen %v", len(verdicts), len(pvs), chosen != nil)
		}
		for i, v := range verdicts {
			if v.Reason == binding.ReasonNone || (chosen != nil && v.PV == chosen.Name) {
				t.Fatalf("verdict %+v", v)
			}
			if i > 0 && verdicts[i-1].PV > v.PV {
				t.Fatalf("verdicts not sorted: %s before %s", verdicts[i-1].PV, v.PV)
			}
		}
		reversed := slices.Clone(pvs)
		slices.Reverse(reversed)
		if again, _ := binding.Match(claim, reversed, delay); nameOf(again) != nameOf(chosen) {
			t.Fatalf("candidate order changed the choice: %q then %q", nameOf(chosen), nameOf(again))
		}
	})
}

// FuzzDecideClaim: a claim sync, with the match the controller would pass,
// never binds a volume bound to another claim, never binds a free volume
// that does not fit the claim (requested by spec.volumeName, with a forged
// bind-completed or not; the exception is a claim the binder bound before),
// and names a volume exactly when it binds. A volume whose claimRef an
// administrator pointed at the claim is bound whatever its size, as in the
// reference (seed volume-prebound-to-the-claim-any-size).
func FuzzDecideClaim(f *testing.F) {
	seedWorlds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		claim, pvs, in := fuzzWorld(data)
		class := newClass(binding.ClaimClass(claim), in.Word("hostpath.csi.volplane.io", "kubernetes.io/no-provisioner", "kubernetes.io/aws-ebs"))
		if in.Bool() {
			class = newClass(class.Name, class.Provisioner, waitForConsumer())
		}
		input := binding.ClaimInput{Claim: claim, Pods: []*v1.Pod{newPod("p")}}
		if in.Intn(4) > 0 {
			input.Class = class
		}
		if in.Bool() {
			input.DefaultClass = newClass("gold", "hostpath.csi.volplane.io")
		}
		if i := slices.IndexFunc(pvs, func(pv *v1.PersistentVolume) bool { return pv.Name == claim.Spec.VolumeName }); i >= 0 {
			input.Volume = pvs[i]
		}
		if claim.Spec.VolumeName == "" {
			input.Match, input.Verdicts = binding.Match(claim, pvs, binding.DelayBinding(input.Class))
			if binding.WantsTally(input) {
				tally := binding.Count(input.Verdicts, input.Match != nil, 0)
				input.Tally = &tally
			}
		}
		d := binding.DecideClaim(input)
		_ = d.String()
		if (d.Action == binding.ClaimBind) != (d.Volume != nil) {
			t.Fatalf("decision %s: a volume exactly when binding", d)
		}
		if d.Action != binding.ClaimBind {
			return
		}
		if d.Volume != input.Volume && d.Volume != input.Match {
			t.Fatalf("binds %s, neither the requested volume nor the match", d.Volume.Name)
		}
		if claimsOther(d.Volume, claim) {
			t.Fatalf("binds %s, whose claimRef %+v names another claim than %s (uid %s): %s", d.Volume.Name, d.Volume.Spec.ClaimRef, binding.ClaimKey(claim), claim.UID, d)
		}
		// bind-completed is a record of ours on an object the user writes:
		// with it a claim may keep a volume it was given, never take a free
		// one that does not fit.
		if d.Volume.Spec.ClaimRef == nil && !boundOnce(claim) && (binding.CheckRequested(claim, d.Volume) != binding.ReasonNone || tooSmall(d.Volume, claim)) {
			t.Fatalf("binds free volume %s that does not fit the claim: %s", d.Volume.Name, d)
		}
		if spec := binding.BindVolumeSpec(d.Volume, claim); spec != nil && spec.Spec.ClaimRef.UID != claim.UID {
			t.Fatalf("bind step 1 points %s at uid %s", spec.Name, spec.Spec.ClaimRef.UID)
		}
	})
}

// boundOnce: the claim's status says the binder bound it (the API server
// resets status on create, and a claim's owner cannot write it).
func boundOnce(claim *v1.PersistentVolumeClaim) bool {
	return claim.Status.Phase == v1.ClaimBound || claim.Status.Phase == v1.ClaimLost
}

// FuzzDecideVolume: a volume sync never releases, unbinds or recycles a
// volume whose claim (same UID) still names it, never acts on a cache miss
// without a live read first, and leaves a volume without claimRef Available.
func FuzzDecideVolume(f *testing.F) {
	seedWorlds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		claim, pvs, in := fuzzWorld(data)
		if len(pvs) == 0 {
			return
		}
		pv := pvs[0]
		input := binding.VolumeInput{Volume: pv, LiveChecked: in.Bool()}
		if in.Intn(4) > 0 {
			input.Claim = claim
		}
		if in.Bool() {
			input.Pods = []*v1.Pod{newPod("p", onNode("node-1"))}
		}
		d := binding.DecideVolume(input)
		_ = d.String()
		ref := pv.Spec.ClaimRef
		switch {
		case ref == nil || ref.UID == "":
			if d.Action != binding.VolumeNone || d.Phase != v1.VolumeAvailable {
				t.Fatalf("volume without a bound claimRef: %s", d)
			}
			return
		case input.Claim == nil && !input.LiveChecked && pv.Status.Phase != v1.VolumeReleased && pv.Status.Phase != v1.VolumeFailed:
			if d.Action != binding.VolumeCheckLive {
				t.Fatalf("claim missing from the cache, no live read: %s", d)
			}
			return
		}
		inUse := input.Claim != nil && input.Claim.UID == ref.UID && input.Claim.Spec.VolumeName == pv.Name
		lets := d.Action == binding.VolumeUnbind || d.Action == binding.VolumeRecycle ||
			d.Phase == v1.VolumeReleased || d.Phase == v1.VolumeAvailable || d.Reclaim != binding.ReclaimNone
		if inUse && lets {
			t.Fatalf("volume %s still named by its claim %s: %s", pv.Name, binding.ClaimKey(input.Claim), d)
		}
		if unbound := binding.UnbindVolumeSpec(pv); unbound != nil && unbound.Spec.ClaimRef != nil && unbound.Spec.ClaimRef.UID != "" {
			t.Fatalf("unbind left uid %s", unbound.Spec.ClaimRef.UID)
		}
	})
}

// FuzzClaimMigration: the storage-provisioner annotations are the claim
// owner's to write. Whatever they say, migrated-to ends up naming only the
// CSI driver csi-translation-lib gives for that provisioner (or nothing),
// and one write settles it: asking again changes nothing.
func FuzzClaimMigration(f *testing.F) {
	f.Add("kubernetes.io/aws-ebs", "", "")
	f.Add("hostpath.csi.volplane.io", "kubernetes.io/gce-pd", "ebs.csi.aws.com")
	f.Add("", "kubernetes.io/cinder", "x")
	f.Fuzz(func(t *testing.T, ga, beta, migrated string) {
		claim := newClaim("data", "1Gi")
		for k, v := range map[string]string{storagehelpers.AnnStorageProvisioner: ga,
			storagehelpers.AnnBetaStorageProvisioner: beta, storagehelpers.AnnMigratedTo: migrated} {
			if v != "" {
				setAnn(&claim.ObjectMeta, k, v)
			}
		}
		out := binding.ClaimMigration(claim)
		if out == nil {
			out = claim
		}
		provisioner, ok := claim.Annotations[storagehelpers.AnnStorageProvisioner]
		if !ok {
			provisioner, ok = claim.Annotations[storagehelpers.AnnBetaStorageProvisioner]
		}
		if got, set := out.Annotations[storagehelpers.AnnMigratedTo]; ok && set && got != "" && got != binding.MigratedDriver(provisioner) {
			t.Fatalf("provisioner %q: migrated-to %q", provisioner, got)
		}
		if again := binding.ClaimMigration(out); again != nil {
			t.Fatalf("a second write: %v then %v", out.Annotations, again.Annotations)
		}
		if p := binding.SetClaimProvisioner(out, "hostpath.csi.volplane.io"); p != nil && binding.SetClaimProvisioner(p, "hostpath.csi.volplane.io") != nil {
			t.Fatalf("SetClaimProvisioner is not settled by one write: %v", p.Annotations)
		}
	})
}
