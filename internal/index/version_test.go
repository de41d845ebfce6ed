package index_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/index"
)

// TestVersionStaysWhileCandidatesDo: through random upserts, deletes and
// reservations, a claim's Version is unchanged only if its Candidates are
// (the very same PV objects).
func TestVersionStaysWhileCandidatesDo(t *testing.T) {
	for iter := 0; iter < 300; iter++ {
		w := newWorld(int64(iter))
		idx := index.New()
		type seen struct {
			v   index.Version
			pvs []*v1.PersistentVolume
		}
		last := map[string]seen{}
		for step := 0; step < 60; step++ {
			name := fmt.Sprintf("pv-%02d", w.rng.Intn(12))
			switch w.rng.Intn(4) {
			case 0:
				idx.Delete(name)
			case 1:
				idx.Reserve(name, binding.ClaimKey(pick(w.rng, w.claims)))
			default:
				idx.Upsert(w.pv(name))
			}
			for _, claim := range w.claims {
				now := seen{idx.Version(claim), idx.Candidates(claim)}
				before, ok := last[claim.Name]
				if ok && now.v == before.v && !slices.Equal(now.pvs, before.pvs) {
					t.Fatalf("iter %d step %d claim %s: version unchanged, candidates changed", iter, step, claim.Name)
				}
				last[claim.Name] = now
			}
		}
	}
}

// A claim's version moves with the PVs of its class and the PVs pre-bound
// to it, whatever their class; not with other classes or reservations.
func TestVersionMovesWithTheClaimsClassAndItsPreBoundVolumes(t *testing.T) {
	idx := index.New()
	claim := versionClaim("gold")
	steps := []struct {
		what  string
		do    func()
		moves bool
	}{
		{"a volume of another class", func() { idx.Upsert(versionPV("s1", "silver", "")) }, false},
		{"a volume of its class", func() { idx.Upsert(versionPV("g1", "gold", "")) }, true},
		{"that volume reserved", func() { idx.Reserve("g1", "ns/other") }, false},
		{"that volume released", func() { idx.Release("g1") }, false},
		{"that volume updated", func() { idx.Upsert(versionPV("g1", "gold", "ns/other")) }, true},
		{"a volume of another class pre-bound to it", func() { idx.Upsert(versionPV("s2", "silver", "ns/data")) }, true},
		{"that volume deleted", func() { idx.Delete("s2") }, true},
		{"the other class's volume deleted", func() { idx.Delete("s1") }, false},
		{"its class's last volume deleted", func() { idx.Delete("g1") }, true},
		{"a volume of its class again", func() { idx.Upsert(versionPV("g1", "gold", "")) }, true},
	}
	before := idx.Version(claim)
	for _, s := range steps {
		s.do()
		now := idx.Version(claim)
		if moved := now != before; moved != s.moves {
			t.Errorf("%s: version moved %v, want %v", s.what, moved, s.moves)
		}
		before = now
	}
}

func versionClaim(class string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"},
		Spec:       v1.PersistentVolumeClaimSpec{StorageClassName: &class},
	}
}

func versionPV(name, class, claimKey string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			StorageClassName: class,
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:         v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	if claimKey != "" {
		ns, n, _ := strings.Cut(claimKey, "/")
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: ns, Name: n}
	}
	return pv
}
