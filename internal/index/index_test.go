package index_test

import (
	"fmt"
	"math/rand"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/index"
)

// world is a random population: claims with fixed identities and PVs that
// refer to them, plus the reservations the index should honour.
type world struct {
	rng    *rand.Rand
	claims []*v1.PersistentVolumeClaim
}

var (
	modeChoices = [][]v1.PersistentVolumeAccessMode{
		{v1.ReadWriteOnce}, {v1.ReadWriteOnce, v1.ReadOnlyMany}, {v1.ReadWriteMany},
		{v1.ReadOnlyMany}, {v1.ReadWriteOncePod}, {v1.ReadWriteMany, v1.ReadWriteOnce, v1.ReadOnlyMany}, {},
	}
	sizeChoices  = []string{"1Gi", "1500Mi", "2Gi", "3Gi", "5Gi", "8Gi"}
	classChoices = []string{"", "gold", "silver"}
	phases       = []v1.PersistentVolumePhase{v1.VolumeAvailable, v1.VolumeAvailable, v1.VolumePending,
		v1.VolumeBound, v1.VolumeReleased, v1.VolumeFailed}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.Intn(len(xs))] }

func newWorld(seed int64) *world {
	w := &world{rng: rand.New(rand.NewSource(seed))}
	for i := 0; i < 4; i++ {
		w.claims = append(w.claims, w.claim(fmt.Sprintf("c%d", i)))
	}
	return w
}

func (w *world) claim(name string) *v1.PersistentVolumeClaim {
	rng := w.rng
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pick(rng, []string{"default", "prod"}), UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: pick(rng, modeChoices[:6]),
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(pick(rng, sizeChoices))}},
		},
	}
	if rng.Intn(4) > 0 {
		class := pick(rng, classChoices)
		c.Spec.StorageClassName = &class
	}
	if rng.Intn(5) == 0 {
		m := v1.PersistentVolumeBlock
		c.Spec.VolumeMode = &m
	}
	if rng.Intn(6) == 0 {
		vac := "fast"
		c.Spec.VolumeAttributesClassName = &vac
	}
	if rng.Intn(4) == 0 {
		c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": pick(rng, []string{"a", "b"})}}
	}
	return c
}

func (w *world) pv(name string) *v1.PersistentVolume {
	rng := w.rng
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:         v1.ResourceList{v1.ResourceStorage: resource.MustParse(pick(rng, sizeChoices))},
			AccessModes:      pick(rng, modeChoices),
			StorageClassName: pick(rng, classChoices),
		},
		Status: v1.PersistentVolumeStatus{Phase: pick(rng, phases)},
	}
	if rng.Intn(5) == 0 {
		m := pick(rng, []v1.PersistentVolumeMode{v1.PersistentVolumeBlock, v1.PersistentVolumeFilesystem})
		pv.Spec.VolumeMode = &m
	}
	if rng.Intn(6) == 0 {
		vac := pick(rng, []string{"fast", "slow"})
		pv.Spec.VolumeAttributesClassName = &vac
	}
	if rng.Intn(2) == 0 {
		pv.Labels = map[string]string{"tier": pick(rng, []string{"a", "b"})}
	}
	if rng.Intn(12) == 0 {
		now := metav1.Now()
		pv.DeletionTimestamp = &now
	}
	w.claimRef(pv)
	return pv
}

// claimRef points a third of the PVs at one of the claims: by name only, with
// the right UID, or with a stale UID.
func (w *world) claimRef(pv *v1.PersistentVolume) {
	if w.rng.Intn(3) > 0 {
		return
	}
	c := pick(w.rng, w.claims)
	ref := &v1.ObjectReference{Namespace: c.Namespace, Name: c.Name}
	switch w.rng.Intn(3) {
	case 1:
		ref.UID = c.UID
	case 2:
		ref.UID = "stale"
	}
	pv.Spec.ClaimRef = ref
}

// TestFindBestEqualsMatch: after random upserts, updates, deletes and
// reservations, FindBest returns for every claim exactly what binding.Match
// returns over all PVs not reserved by another claim.
func TestFindBestEqualsMatch(t *testing.T) {
	for iter := 0; iter < 3000; iter++ {
		w := newWorld(int64(iter))
		idx := index.New()
		live := map[string]*v1.PersistentVolume{}
		n := w.rng.Intn(40)
		for i := 0; i < n; i++ {
			pv := w.pv(fmt.Sprintf("pv-%02d", i))
			idx.Upsert(pv)
			live[pv.Name] = pv
		}
		w.churn(idx, live, n)
		held := w.reserve(idx, live)
		for _, claim := range w.claims {
			for _, delay := range []bool{false, true} {
				want, _ := binding.Match(claim, visible(live, held, binding.ClaimKey(claim)), delay)
				if got := idx.FindBest(claim, delay); name(got) != name(want) {
					t.Fatalf("iter %d claim %s delay %v: FindBest %q, Match %q", iter, claim.Name, delay, name(got), name(want))
				}
			}
		}
	}
}

// churn replaces and deletes some PVs, as informer updates do.
func (w *world) churn(idx *index.Index, live map[string]*v1.PersistentVolume, n int) {
	for i := 0; i < n/3; i++ {
		name := fmt.Sprintf("pv-%02d", w.rng.Intn(n))
		if w.rng.Intn(3) == 0 {
			idx.Delete(name)
			delete(live, name)
			continue
		}
		pv := w.pv(name)
		idx.Upsert(pv)
		live[name] = pv
	}
}

// reserve holds a few PVs for random claims and releases some again.
func (w *world) reserve(idx *index.Index, live map[string]*v1.PersistentVolume) map[string]string {
	held := map[string]string{}
	for name := range live {
		if w.rng.Intn(6) != 0 {
			continue
		}
		key := binding.ClaimKey(pick(w.rng, w.claims))
		if !idx.Reserve(name, key) {
			panic("reserve of a known, unheld PV failed")
		}
		held[name] = key
		if w.rng.Intn(3) == 0 {
			idx.Release(name)
			delete(held, name)
		}
	}
	return held
}

func visible(live map[string]*v1.PersistentVolume, held map[string]string, claimKey string) []*v1.PersistentVolume {
	var out []*v1.PersistentVolume
	for name, pv := range live {
		if holder, ok := held[name]; !ok || holder == claimKey {
			out = append(out, pv)
		}
	}
	return out
}

func name(pv *v1.PersistentVolume) string {
	if pv == nil {
		return ""
	}
	return pv.Name
}
