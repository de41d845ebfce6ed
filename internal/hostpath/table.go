package hostpath

import (
	"bytes"
	"encoding/json"
	"iter"
	"math/bits"
	"slices"
)

// table is one kind of record of the state (volumes, snapshots, ...) keyed
// by ID: a persistent map (a hash array mapped trie), so a copy of a state
// is a copy of a few roots and a change copies only the path to the changed
// key, O(log n), never the other records. A table reached from a state that
// current returned is never changed again; update changes a shallow copy,
// whose changes replace nodes rather than edit them.
//
// The records a table holds are shared between every state that has them:
// nobody changes one after putting it. A writer that wants to change a
// record puts a changed copy (state.editVolume).
type table[T any] struct {
	root *tnode[T]
	n    int
	// changed are the keys put or deleted since the table was last
	// persisted; nil in a table current returned.
	changed map[string]struct{}
}

// tnode is a node of the trie: the entries whose hashes share the node's
// prefix, indexed by the next tableBits bits of the hash through bitmap.
// Past the last level of hash bits (keys whose hashes are equal) a node is
// a plain list of leaves, searched by key.
type tnode[T any] struct {
	bitmap  uint64
	entries []tentry[T]
}

// tentry is a leaf (key, value) or, when child is set, a subtree.
type tentry[T any] struct {
	key   string
	hash  uint64
	value *T
	child *tnode[T]
}

const (
	tableBits = 6
	tableMask = 1<<tableBits - 1
)

// tableHash is FNV-1a, 64 bits: the keys are IDs the driver or the CO
// chose, equal hashes are handled, and a fixed hash keeps the table free of
// process-wide seeds.
func tableHash(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(key) {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return h
}

// Len is the number of records.
func (t *table[T]) Len() int { return t.n }

// Get returns the record under key, or nil. The caller must not change it.
func (t *table[T]) Get(key string) *T {
	return t.root.get(key, tableHash(key))
}

func (n *tnode[T]) get(key string, hash uint64) *T {
	for shift := uint(0); n != nil; shift += tableBits {
		if shift >= 64 {
			for _, e := range n.entries {
				if e.key == key {
					return e.value
				}
			}
			return nil
		}
		bit := uint64(1) << (hash >> shift & tableMask)
		if n.bitmap&bit == 0 {
			return nil
		}
		e := &n.entries[n.index(bit)]
		if e.child == nil {
			if e.key == key {
				return e.value
			}
			return nil
		}
		n = e.child
	}
	return nil
}

func (n *tnode[T]) index(bit uint64) int { return bits.OnesCount64(n.bitmap & (bit - 1)) }

// IsZero makes an empty table one that omitzero leaves out.
func (t table[T]) IsZero() bool { return t.n == 0 }

// All yields every record, in an order that depends on the keys only.
func (t *table[T]) All() iter.Seq2[string, *T] {
	return func(yield func(string, *T) bool) {
		t.root.each(yield)
	}
}

func (n *tnode[T]) each(yield func(string, *T) bool) bool {
	if n == nil {
		return true
	}
	for _, e := range n.entries {
		if e.child != nil {
			if !e.child.each(yield) {
				return false
			}
		} else if !yield(e.key, e.value) {
			return false
		}
	}
	return true
}

// IDs yields every key, in the order of All.
func (t *table[T]) IDs() iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range t.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// Keys are the keys of every record, unsorted.
func (t *table[T]) Keys() []string {
	return slices.AppendSeq(make([]string, 0, t.n), t.IDs())
}

// Put records v under key, replacing any record there.
func (t *table[T]) Put(key string, v *T) {
	var added bool
	t.root, added = t.root.put(tentry[T]{key: key, hash: tableHash(key), value: v}, 0, false)
	if added {
		t.n++
	}
	t.markChanged(key)
}

// Delete forgets the record under key, if there is one.
func (t *table[T]) Delete(key string) {
	var removed bool
	t.root, removed = t.root.delete(key, tableHash(key), 0)
	if removed {
		t.n--
	}
	t.markChanged(key)
}

func (t *table[T]) markChanged(key string) {
	if t.changed == nil {
		t.changed = map[string]struct{}{}
	}
	t.changed[key] = struct{}{}
}

// put returns a copy of n with leaf in it; n is left as it was. With own,
// n and the nodes under it belong to the caller alone (a table being
// built), and are changed in place instead.
func (n *tnode[T]) put(leaf tentry[T], shift uint, own bool) (*tnode[T], bool) {
	if n == nil {
		n, own = &tnode[T]{}, true
	}
	if shift >= 64 {
		for i, e := range n.entries {
			if e.key == leaf.key {
				return n.with(i, leaf, own), false
			}
		}
		if own {
			n.entries = append(n.entries, leaf)
			return n, true
		}
		return &tnode[T]{entries: append(slices.Clip(n.entries), leaf)}, true
	}
	bit := uint64(1) << (leaf.hash >> shift & tableMask)
	i := n.index(bit)
	if n.bitmap&bit == 0 {
		if own {
			n.bitmap, n.entries = n.bitmap|bit, slices.Insert(n.entries, i, leaf)
			return n, true
		}
		return &tnode[T]{bitmap: n.bitmap | bit, entries: slices.Insert(slices.Clone(n.entries), i, leaf)}, true
	}
	e := n.entries[i]
	switch {
	case e.child != nil:
		child, added := e.child.put(leaf, shift+tableBits, own)
		return n.with(i, tentry[T]{child: child}, own), added
	case e.key == leaf.key:
		return n.with(i, leaf, own), false
	}
	// Two keys share this slot: push both one level down.
	child, _ := (*tnode[T])(nil).put(e, shift+tableBits, true)
	child, _ = child.put(leaf, shift+tableBits, true)
	return n.with(i, tentry[T]{child: child}, own), true
}

// with is n with entry i replaced: a copy, or n itself when owned.
func (n *tnode[T]) with(i int, e tentry[T], own bool) *tnode[T] {
	if !own {
		n = &tnode[T]{bitmap: n.bitmap, entries: slices.Clone(n.entries)}
	}
	n.entries[i] = e
	return n
}

// delete returns a copy of n without key (nil when nothing is left); n is
// left as it was.
func (n *tnode[T]) delete(key string, hash uint64, shift uint) (*tnode[T], bool) {
	if n == nil {
		return nil, false
	}
	if shift >= 64 {
		i := slices.IndexFunc(n.entries, func(e tentry[T]) bool { return e.key == key })
		if i < 0 {
			return n, false
		}
		return n.without(i, 0), true
	}
	bit := uint64(1) << (hash >> shift & tableMask)
	if n.bitmap&bit == 0 {
		return n, false
	}
	i := n.index(bit)
	e := n.entries[i]
	if e.child == nil {
		if e.key != key {
			return n, false
		}
		return n.without(i, bit), true
	}
	child, removed := e.child.delete(key, hash, shift+tableBits)
	switch {
	case !removed:
		return n, false
	case child == nil:
		return n.without(i, bit), true
	case len(child.entries) == 1 && child.entries[0].child == nil:
		// A lone leaf moves up: its slot here is its own.
		return n.with(i, child.entries[0], false), true
	}
	return n.with(i, tentry[T]{child: child}, false), true
}

// without is a copy of n without entry i (whose bit is bit), or nil when
// it was the last.
func (n *tnode[T]) without(i int, bit uint64) *tnode[T] {
	if len(n.entries) == 1 {
		return nil
	}
	return &tnode[T]{bitmap: n.bitmap &^ bit, entries: slices.Delete(slices.Clone(n.entries), i, i+1)}
}

// MarshalJSON writes the table as a JSON object with sorted keys, as
// encoding/json writes a map.
func (t table[T]) MarshalJSON() ([]byte, error) {
	keys := t.Keys()
	slices.Sort(keys)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(t.Get(k))
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a JSON object of records; null records are skipped.
func (t *table[T]) UnmarshalJSON(data []byte) error {
	var m map[string]*T
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*t = tableOf(m)
	return nil
}

// tableOf is a table holding the non-nil records of m, none of them
// changed.
func tableOf[T any](m map[string]*T) table[T] {
	var t table[T]
	for k, v := range m {
		if v != nil {
			t.root, _ = t.root.put(tentry[T]{key: k, hash: tableHash(k), value: v}, 0, true)
			t.n++
		}
	}
	return t
}
