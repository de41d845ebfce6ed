package index_test

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/index"
)

// benchData is one population: n free PVs over two classes and three
// access-mode sets, and claims of one class asking for RWO.
type benchData struct {
	pvs    []*v1.PersistentVolume
	claims []*v1.PersistentVolumeClaim
}

func makeBenchData(n int) benchData {
	rng := rand.New(rand.NewSource(int64(n)))
	modes := [][]v1.PersistentVolumeAccessMode{
		{v1.ReadWriteOnce}, {v1.ReadWriteOnce}, {v1.ReadWriteOnce, v1.ReadOnlyMany}, {v1.ReadWriteMany},
	}
	var d benchData
	for i := 0; i < n; i++ {
		d.pvs = append(d.pvs, &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-%07d", i)},
			Spec: v1.PersistentVolumeSpec{
				Capacity:         v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(int64(1+rng.Intn(1000))<<30, resource.BinarySI)},
				AccessModes:      modes[rng.Intn(len(modes))],
				StorageClassName: pick(rng, []string{"gold", "gold", "gold", "silver"}),
			},
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
		})
	}
	for i := 0; i < 256; i++ {
		class := "gold"
		d.claims = append(d.claims, &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("c-%d", i)},
			Spec: v1.PersistentVolumeClaimSpec{
				StorageClassName: &class,
				AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceStorage: *resource.NewQuantity(int64(1+rng.Intn(1000))<<30, resource.BinarySI)}},
			},
		})
	}
	return d
}

// referenceIndex reproduces how kube-controller-manager v1.36 matches: a
// client-go Indexer keyed by the access-mode string, each group that includes
// the requested modes searched fewest modes first with FindMatchingVolume.
type referenceIndex struct{ store cache.Indexer }

func newReferenceIndex(pvs []*v1.PersistentVolume) referenceIndex {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"accessmodes": func(obj interface{}) ([]string, error) {
		set, _ := binding.ModesOf(obj.(*v1.PersistentVolume).Spec.AccessModes)
		return []string{set.String()}, nil
	}})
	for _, pv := range pvs {
		if err := store.Add(pv); err != nil {
			panic(err)
		}
	}
	return referenceIndex{store}
}

func (r referenceIndex) find(claim *v1.PersistentVolumeClaim) *v1.PersistentVolume {
	wanted, _ := binding.ModesOf(claim.Spec.AccessModes)
	var keys []string
	for _, key := range r.store.ListIndexFuncValues("accessmodes") {
		if modeSetOf(key).Includes(wanted) {
			keys = append(keys, key)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return modeSetOf(keys[i]).Rank() < modeSetOf(keys[j]).Rank() })
	for _, key := range keys {
		objs, err := r.store.ByIndex("accessmodes", key)
		if err != nil {
			panic(err)
		}
		volumes := make([]*v1.PersistentVolume, len(objs))
		for i, obj := range objs {
			volumes[i] = obj.(*v1.PersistentVolume)
		}
		pv, err := storagehelpers.FindMatchingVolume(claim, volumes, nil, nil, false, true)
		if err != nil {
			panic(err)
		}
		if pv != nil {
			return pv
		}
	}
	return nil
}

func modeSetOf(key string) binding.ModeSet {
	for _, s := range binding.GroupOrder() {
		if s.String() == key {
			return s
		}
	}
	panic("bad key " + key)
}

// BenchmarkFindBest measures one match for a claim against n free PVs: the
// B-tree index against the reference's scan. Building either is not timed.
func BenchmarkFindBest(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		data := makeBenchData(n)
		idx := index.New()
		for _, pv := range data.pvs {
			idx.Upsert(pv)
		}
		ref := newReferenceIndex(data.pvs)
		checkSameCapacity(b, idx, ref, data.claims)
		b.Run(fmt.Sprintf("index/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				idx.FindBest(data.claims[i%len(data.claims)], false)
			}
		})
		b.Run(fmt.Sprintf("reference/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ref.find(data.claims[i%len(data.claims)])
			}
		})
	}
}

// checkSameCapacity makes sure both sides answer the same question: equal
// capacities (the reference breaks ties by map order, so names may differ).
func checkSameCapacity(b *testing.B, idx *index.Index, ref referenceIndex, claims []*v1.PersistentVolumeClaim) {
	for _, c := range claims[:32] {
		got, want := idx.FindBest(c, false), ref.find(c)
		if (got == nil) != (want == nil) {
			b.Fatalf("claim %s: index %v, reference %v", c.Name, name(got), name(want))
		}
		if got == nil {
			continue
		}
		if gc, wc := binding.Capacity(got), binding.Capacity(want); gc.Cmp(wc) != 0 {
			b.Fatalf("claim %s: index %s, reference %s", c.Name, got.Name, want.Name)
		}
	}
}

// BenchmarkUpsert measures replacing one PV's copy among 10,000, as an
// informer update does: what every PV change costs the index, including
// noting the change for Version.
func BenchmarkUpsert(b *testing.B) {
	data := makeBenchData(10000)
	idx := index.New()
	for _, pv := range data.pvs {
		idx.Upsert(pv)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		idx.Upsert(data.pvs[i%len(data.pvs)])
	}
}
