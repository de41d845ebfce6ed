package binding_test

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

// TestMatchAgreesWithKubernetes runs random populations through Match and
// through the function kube-controller-manager uses
// (component-helpers FindMatchingVolume), called the way its PV index calls
// it: once per access-mode group, fewest modes first. Where Kubernetes leaves
// the outcome to list or map order, the reference gets lists sorted by
// (capacity, name) and equal-sized groups in our order, so any difference is
// a real semantic difference. Pending PVs are left out: treating them as free
// is our documented deviation.
func TestMatchAgreesWithKubernetes(t *testing.T) {
	rng := rand.New(rand.NewSource(20240601))
	for i := 0; i < 3000; i++ {
		claim := randomClaim(rng)
		pvs := randomPVs(rng, claim, rng.Intn(30))
		delay := rng.Intn(4) == 0
		got, _ := binding.Match(claim, pvs, delay)
		want, err := referenceMatch(claim, pvs, delay)
		if err != nil {
			t.Fatalf("case %d: reference: %v", i, err)
		}
		if nameOf(got) != nameOf(want) {
			t.Fatalf("case %d: Match chose %q, Kubernetes %q\nclaim %s\npvs:\n%s",
				i, nameOf(got), nameOf(want), describeClaim(claim), describePVs(pvs))
		}
	}
}

func referenceMatch(claim *v1.PersistentVolumeClaim, pvs []*v1.PersistentVolume, delay bool) (*v1.PersistentVolume, error) {
	groups := map[binding.ModeSet][]*v1.PersistentVolume{}
	for _, pv := range pvs {
		set, _ := binding.ModesOf(pv.Spec.AccessModes)
		groups[set] = append(groups[set], pv)
	}
	var sets []binding.ModeSet
	for set := range groups {
		if containsAll(set, claim.Spec.AccessModes) {
			sets = append(sets, set)
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].Rank() < sets[j].Rank() })
	for _, set := range sets {
		list := groups[set]
		sort.Slice(list, func(i, j int) bool {
			ci, cj := binding.Capacity(list[i]), binding.Capacity(list[j])
			if c := ci.Cmp(cj); c != 0 {
				return c < 0
			}
			return list[i].Name < list[j].Name
		})
		pv, err := storagehelpers.FindMatchingVolume(claim, list, nil, nil, delay, true)
		if err != nil || pv != nil {
			return pv, err
		}
	}
	return nil, nil
}

// containsAll mirrors the reference's ContainsAllAccessModes over the modes a
// group key can hold.
func containsAll(set binding.ModeSet, wanted []v1.PersistentVolumeAccessMode) bool {
	for _, w := range wanted {
		one, unknown := binding.ModesOf([]v1.PersistentVolumeAccessMode{w})
		if unknown || !set.Includes(one) {
			return false
		}
	}
	return true
}

var (
	allModes = []v1.PersistentVolumeAccessMode{RWO, ROX, RWX, RWOP}
	sizes    = []string{"1Gi", "1500Mi", "2Gi", "3Gi", "5Gi", "8Gi"}
	classes  = []string{"", "gold", "silver"}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.Intn(len(xs))] }

func randomModes(rng *rand.Rand, allowEmpty bool) []v1.PersistentVolumeAccessMode {
	for {
		var m []v1.PersistentVolumeAccessMode
		for _, mode := range allModes {
			if rng.Intn(3) == 0 {
				m = append(m, mode)
			}
		}
		if len(m) > 0 || allowEmpty {
			rng.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
			return m
		}
	}
}

func randomClaim(rng *rand.Rand) *v1.PersistentVolumeClaim {
	c := newClaim("c", pick(rng, sizes), claimModes(randomModes(rng, false)...))
	switch rng.Intn(4) {
	case 1:
		claimClass(pick(rng, classes))(c)
	case 2:
		claimBetaClass(pick(rng, classes))(c)
	}
	if rng.Intn(4) == 0 {
		claimBlock()(c)
	}
	if rng.Intn(5) == 0 {
		claimVAC("fast")(c)
	}
	if rng.Intn(4) == 0 {
		claimSelector("tier", pick(rng, []string{"a", "b"}))(c)
	}
	return c
}

func randomPVs(rng *rand.Rand, claim *v1.PersistentVolumeClaim, n int) []*v1.PersistentVolume {
	pvs := make([]*v1.PersistentVolume, n)
	for i := range pvs {
		pvs[i] = randomPV(rng, fmt.Sprintf("pv-%02d", i), claim)
	}
	return pvs
}

func randomPV(rng *rand.Rand, name string, claim *v1.PersistentVolumeClaim) *v1.PersistentVolume {
	pv := newPV(name, pick(rng, sizes), withModes(randomModes(rng, rng.Intn(20) == 0)...),
		withPhase(pick(rng, []v1.PersistentVolumePhase{v1.VolumeAvailable, v1.VolumeAvailable, v1.VolumeBound, v1.VolumeReleased, v1.VolumeFailed})))
	if rng.Intn(2) == 0 {
		withClass(pick(rng, classes))(pv)
	} else if rng.Intn(4) == 0 {
		withBetaClass(pick(rng, classes))(pv)
	}
	if rng.Intn(4) == 0 {
		pick(rng, []pvOpt{withBlock(), withFilesystem()})(pv)
	}
	if rng.Intn(5) == 0 {
		withVAC(pick(rng, []string{"fast", "slow"}))(pv)
	}
	if rng.Intn(2) == 0 {
		withLabels("tier", pick(rng, []string{"a", "b"}))(pv)
	}
	if rng.Intn(15) == 0 {
		deleting()(pv)
	}
	randomClaimRef(rng, claim)(pv)
	return pv
}

func randomClaimRef(rng *rand.Rand, claim *v1.PersistentVolumeClaim) pvOpt {
	switch rng.Intn(10) {
	case 0:
		return preBoundTo(claim.Namespace, claim.Name)
	case 1:
		return boundTo(claim.Namespace, claim.Name)
	case 2:
		return boundToUID(claim.Namespace, claim.Name, types.UID("stale"))
	case 3:
		return boundTo(claim.Namespace, "other")
	case 4:
		return preBoundTo("elsewhere", claim.Name)
	}
	return func(*v1.PersistentVolume) {}
}

func describeClaim(c *v1.PersistentVolumeClaim) string {
	return fmt.Sprintf("class=%q modes=%v size=%v mode=%v vac=%v selector=%v",
		binding.ClaimClass(c), c.Spec.AccessModes, c.Spec.Resources.Requests.Storage(),
		c.Spec.VolumeMode, c.Spec.VolumeAttributesClassName, metav1.FormatLabelSelector(c.Spec.Selector))
}

func describePVs(pvs []*v1.PersistentVolume) string {
	var b strings.Builder
	for _, pv := range pvs {
		fmt.Fprintf(&b, "  %s class=%q modes=%v cap=%v phase=%s mode=%v vac=%v labels=%v ref=%v deleting=%v\n",
			pv.Name, binding.VolumeClass(pv), pv.Spec.AccessModes, pv.Spec.Capacity.Storage(), pv.Status.Phase,
			pv.Spec.VolumeMode, pv.Spec.VolumeAttributesClassName, pv.Labels, pv.Spec.ClaimRef, pv.DeletionTimestamp != nil)
	}
	return b.String()
}
