package doctor

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/invariants"
)

func claimObject(c *v1.PersistentVolumeClaim) Object {
	return Object{Kind: ObjectClaim, Namespace: c.Namespace, Name: c.Name}
}

func volumeObject(name string) Object { return Object{Kind: ObjectVolume, Name: name} }

func explainClaim(c *v1.PersistentVolumeClaim) Fix {
	return Fix{Says: "see every volume considered and what the claim waits for",
		Command: "volplane explain pvc " + c.Namespace + "/" + c.Name}
}

// pendingClaims: claims Pending for longer than threshold, each with the
// summary `volplane explain` gives (what the binder decides for it, and
// its verdicts on every volume counted in one line), and the steps out of
// the two traps explain names: pods put on a node directly (placedFixes)
// and a claim no node has room for (roomFixes). A claim of a
// WaitForFirstConsumer class that no pod uses is at rest, not a problem.
func pendingClaims(s *Snapshot, threshold time.Duration) []Finding {
	var out []Finding
	for _, c := range s.Claims {
		age := s.Now.Sub(c.CreationTimestamp.Time)
		if c.Status.Phase != v1.ClaimPending || c.DeletionTimestamp != nil || age < threshold {
			continue
		}
		if binding.DelayBinding(s.FindClass(binding.ClaimClass(c))) && len(s.PodsNaming(c.Namespace, c.Name)) == 0 {
			continue
		}
		r := explain.Claim(c, &s.Facts)
		problem := fmt.Sprintf("Pending for %s: %s", Age(age), r.Summary)
		if r.Volumes != nil && r.Volumes.Tally.Considered > 0 {
			problem += " " + explain.Sentence(r.Volumes.Summary)
		}
		out = append(out, Finding{Kind: KindClaimPending, Severity: SeverityProblem, Object: claimObject(c), Problem: problem,
			Fixes: append(append(placedFixes(c, r), roomFixes(c, r)...), explainClaim(c))})
	}
	return out
}

// retainedVolumes: Released Retain volumes whose claim is gone (or is a
// new claim of the same name). That is their policy's rest, not a
// problem: the binder binds them to no claim until someone gives the old
// tenant's data to one, which only that someone can decide.
func retainedVolumes(s *Snapshot) []Finding {
	var out []Finding
	for _, pv := range s.Volumes {
		ref := pv.Spec.ClaimRef
		if pv.Status.Phase != v1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain ||
			ref == nil || pv.DeletionTimestamp != nil {
			continue
		}
		claim := s.FindClaim(ref.Namespace, ref.Name)
		if claim != nil && claim.UID == ref.UID {
			continue
		}
		key := binding.ClaimRefKey(ref)
		f := Finding{Kind: KindRetainedVolume, Severity: SeverityInfo, Object: volumeObject(pv.Name),
			Problem: fmt.Sprintf("Released with reclaim policy Retain: its claim %s is gone, and its data kept; no claim binds it until you give it to one.", key)}
		fix := Fix{Says: "to give its data to one claim, pre-bind it to that claim: only that claim can bind it",
			Risk:    fmt.Sprintf("the claim named gets the data of claim %s as it is; save or wipe it first if it goes to someone else", key),
			Command: "volplane release pv " + pv.Name + " --to NAMESPACE/NAME"}
		if claim != nil {
			f.Problem = fmt.Sprintf("Released with reclaim policy Retain: its claim %s was deleted, and its data kept; the claim of that name now is a new one (uid %s), which it does not bind by itself.",
				key, claim.UID)
			fix.Says = fmt.Sprintf("to give its data to the new claim %s, pre-bind it to that claim: only that claim can bind it", key)
			fix.Command = "volplane release pv " + pv.Name + " --to " + key
		}
		f.Fixes = []Fix{fix}
		out = append(out, f)
	}
	return out
}

// bindingInvariants: the binder's invariants (internal/invariants), each
// broken one a finding about its claim, or about the volume two Bound
// claims share.
func bindingInvariants(s *Snapshot) []Finding {
	pvs := values(s.Volumes)
	var out []Finding
	single := map[string]bool{}
	owners := map[string][]v1.PersistentVolumeClaim{}
	for _, c := range s.Claims {
		for _, v := range invariants.Bindings([]v1.PersistentVolumeClaim{*c}, pvs) {
			single[v] = true
			out = append(out, invariantFinding(claimObject(c), v, Fix{Says: "see the claim and its volume",
				Command: "volplane explain pvc " + c.Namespace + "/" + c.Name}))
		}
		if c.Status.Phase == v1.ClaimBound {
			owners[c.Spec.VolumeName] = append(owners[c.Spec.VolumeName], *c)
		}
	}
	for name, claims := range owners {
		if len(claims) < 2 {
			continue
		}
		for _, v := range invariants.Bindings(claims, pvs) {
			if !single[v] {
				out = append(out, invariantFinding(volumeObject(name), v,
					Fix{Says: "see which claim the volume points to", Command: "volplane explain pv " + name}))
			}
		}
	}
	return out
}

func invariantFinding(o Object, violation string, see Fix) Finding {
	return Finding{Kind: KindBindingInvariant, Severity: SeverityProblem, Object: o,
		Problem: violation + ": the binder never leaves this at rest (a bug, or a hand edit); report it with both objects' YAML.",
		Fixes:   []Fix{see}}
}

func values[T any](ptrs []*T) []T {
	out := make([]T, 0, len(ptrs))
	for _, p := range ptrs {
		out = append(out, *p)
	}
	return out
}
