package index_test

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/fuzzing"
	"github.com/volplane/volplane/internal/index"
	"github.com/volplane/volplane/internal/resourceversion"
)

// model is the brute force the index must agree with: the PVs it should
// hold and who reserved which.
type model struct {
	live map[string]*v1.PersistentVolume
	held map[string]string
}

// upsert keeps the newer copy, as Index.Upsert promises.
func (m *model) upsert(pv *v1.PersistentVolume) {
	if old, ok := m.live[pv.Name]; ok && resourceversion.Older(pv, old) {
		return
	}
	m.live[pv.Name] = pv
}

func (m *model) reserve(pv, claimKey string) bool {
	if _, ok := m.live[pv]; !ok {
		return false
	}
	if holder, ok := m.held[pv]; ok {
		return holder == claimKey
	}
	m.held[pv] = claimKey
	return true
}

// FuzzFindBestEqualsMatch is TestFindBestEqualsMatch with what users write
// left arbitrary: selectors (invalid ones included), quantities (past int64,
// fractions), access modes, classes, volume modes, and PVs whose copies
// arrive out of order. After any sequence of upserts, deletes, reservations
// and releases, FindBest returns for every claim what binding.Match returns
// over the PVs not reserved by another claim, Reserve answers as the model
// does, and Candidates is every PV of the claim's class or naming the claim.
func FuzzFindBestEqualsMatch(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x02\x08\x00\x01\x00\x00\x00\x00\x01\x00\x00\x01\x00\x02\x00\x03\x01\x02\x01\x00\x05"))
	f.Add([]byte("\x03\x0c\x00\x00\x00\x00\x01\x01\x00\x05\x00\x00\x00\x00\x01\x02\x02\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzing.New(data)
		names := make([]string, 1+in.Intn(6))
		for i := range names {
			names[i] = fmt.Sprintf("pv-%d", i)
		}
		claims := make([]*v1.PersistentVolumeClaim, 1+in.Intn(3))
		for i := range claims {
			claims[i] = in.Claim(names)
		}
		idx, m := index.New(), &model{live: map[string]*v1.PersistentVolume{}, held: map[string]string{}}
		for ops := in.Intn(24); ops > 0; ops-- {
			name := fuzzing.Pick(in, names...)
			switch in.Intn(6) {
			case 0:
				idx.Delete(name)
				delete(m.live, name)
				delete(m.held, name)
			case 1:
				key := binding.ClaimKey(fuzzing.Pick(in, claims...))
				if got, want := idx.Reserve(name, key), m.reserve(name, key); got != want {
					t.Fatalf("Reserve(%s, %s) = %v, want %v", name, key, got, want)
				}
			case 2:
				idx.Release(name)
				delete(m.held, name)
			default:
				pv := in.Volume(name)
				pv.UID = types.UID(fuzzing.Pick(in, "1", "2")) // a re-created PV has another UID
				pv.ResourceVersion = in.Word("1", "2", "10", "")
				idx.Upsert(pv)
				m.upsert(pv)
			}
		}
		if idx.Len() != len(m.live) {
			t.Fatalf("index holds %d PVs, want %d", idx.Len(), len(m.live))
		}
		for _, claim := range claims {
			key := binding.ClaimKey(claim)
			for _, delay := range []bool{false, true} {
				want, _ := binding.Match(claim, visible(m.live, m.held, key), delay)
				if got := idx.FindBest(claim, delay); name(got) != name(want) {
					t.Fatalf("claim %s (uid %s) delay %v: FindBest %q, Match %q", key, claim.UID, delay, name(got), name(want))
				}
			}
			if got, want := pvNames(idx.Candidates(claim)), candidates(m.live, claim); !slices.Equal(got, want) {
				t.Fatalf("Candidates(%s) = %v, want %v", key, got, want)
			}
		}
	})
}

// candidates is Candidates by brute force: the PVs of the claim's class and
// those whose claimRef names it, sorted by name.
func candidates(live map[string]*v1.PersistentVolume, claim *v1.PersistentVolumeClaim) []string {
	var out []string
	for _, pv := range live {
		ref := pv.Spec.ClaimRef
		if binding.VolumeClass(pv) == binding.ClaimClass(claim) || (ref != nil && binding.ClaimRefKey(ref) == binding.ClaimKey(claim)) {
			out = append(out, pv.Name)
		}
	}
	slices.Sort(out)
	return out
}

func pvNames(pvs []*v1.PersistentVolume) []string {
	var out []string
	for _, pv := range pvs {
		out = append(out, pv.Name)
	}
	return out
}
