package hostpath

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// A table holds what a map would, through any sequence of puts and
// deletes, and every earlier version of it stays as it was.
func TestTableIsAPersistentMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab table[int]
	model := map[string]int{}
	type version struct {
		tab   table[int]
		model map[string]int
	}
	var versions []version
	for i := range 20_000 {
		key := fmt.Sprintf("vol-%d", rng.IntN(3_000))
		if rng.IntN(3) == 0 {
			tab.Delete(key)
			delete(model, key)
		} else {
			tab.Put(key, &i)
			model[key] = i
		}
		if i%1_000 == 0 {
			versions = append(versions, version{tab, maps.Clone(model)})
		}
	}
	versions = append(versions, version{tab, model})
	for i, v := range versions {
		if got := tableContent(&v.tab); !maps.Equal(got, v.model) || v.tab.Len() != len(v.model) {
			t.Fatalf("version %d holds %d records (Len %d), want %d", i, len(got), v.tab.Len(), len(v.model))
		}
		for k, want := range v.model {
			if got := v.tab.Get(k); got == nil || *got != want {
				t.Fatalf("version %d: Get(%s) = %v, want %d", i, k, got, want)
			}
		}
		if v.tab.Get("absent") != nil {
			t.Fatalf("version %d: Get of an absent key found a record", i)
		}
	}
	built := tableOf(map[string]*int{"a": new(1), "b": new(2), "gone": nil})
	if got := tableContent(&built); !maps.Equal(got, map[string]int{"a": 1, "b": 2}) || built.changed != nil {
		t.Errorf("tableOf = %v (changed %v), want a and b, none changed", got, built.changed)
	}
}

// Keys whose hashes are equal (past the last level of hash bits) share a
// list node, and are put, found and deleted by key.
func TestTableKeysOfEqualHash(t *testing.T) {
	const hash = 0xdeadbeefcafef00d
	var root *tnode[string]
	keys := []string{"a", "b", "c"}
	for _, k := range keys {
		root, _ = root.put(tentry[string]{key: k, hash: hash, value: new(k)}, 0, false)
	}
	for _, k := range keys {
		if got := root.get(k, hash); got == nil || *got != k {
			t.Fatalf("get(%s) = %v", k, got)
		}
	}
	before := root
	root, removed := root.delete("b", hash, 0)
	if !removed || root.get("b", hash) != nil || root.get("a", hash) == nil || root.get("c", hash) == nil {
		t.Fatalf("after deleting b: removed %v, b %v, a %v, c %v", removed, root.get("b", hash), root.get("a", hash), root.get("c", hash))
	}
	if before.get("b", hash) == nil {
		t.Error("delete changed the version it started from")
	}
	root, _ = root.delete("a", hash, 0)
	root, _ = root.delete("c", hash, 0)
	if root != nil {
		t.Errorf("root after deleting every key = %+v, want nil", root)
	}
}

func tableContent(t *table[int]) map[string]int {
	m := map[string]int{}
	for k, v := range t.All() {
		m[k] = *v
	}
	if keys := t.Keys(); len(keys) != len(m) || !slices.Equal(slices.Sorted(slices.Values(keys)), slices.Sorted(maps.Keys(m))) {
		panic("Keys and All disagree")
	}
	return m
}
