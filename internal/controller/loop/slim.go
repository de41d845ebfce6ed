package loop

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unique"

	v1 "k8s.io/api/core/v1"
)

// Slim is the informer transform of every loop: StripManagedFields, then,
// for PVs and claims, the maps and strings that many objects hold alike are
// shared between them (Shared). Nothing is dropped: a cached copy written
// back is the object as the API server sent it.
//
// At 100,000 PVs and 100,000 claims the claims' resources.requests, the
// PVs' capacity, the claims' status.capacity and the binder's annotations
// were a third of the controller's live heap, nearly all of it the same few
// maps repeated (a Go map of one quantity costs about 600 bytes).
func Slim(obj any) (any, error) {
	obj, err := StripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	switch o := obj.(type) {
	case *v1.PersistentVolume:
		Shared.Volume(o)
	case *v1.PersistentVolumeClaim:
		Shared.Claim(o)
	}
	return obj, nil
}

// Shared is the process's one Intern table: informers of one process share
// their maps through it.
var Shared = NewIntern(4096)

// Intern hands out one canonical copy of equal maps and strings, so that
// cached objects holding equal values hold the same one.
//
// The contract that makes sharing safe is the informer's own: a cached
// object is never modified (a loop changes a DeepCopy, which copies maps).
// Verify checks that contract held for every shared map.
//
// It keeps at most max maps of each kind; when full it starts over, so
// values seen once (an annotation naming one claim) cannot grow it without
// bound. Maps handed out before stay shared by the objects holding them.
type Intern struct {
	mu    sync.Mutex
	max   int
	lists map[string]v1.ResourceList
	maps  map[string]map[string]string
	ones  map[string][]string
}

// NewIntern returns an empty table holding up to max maps of each kind.
func NewIntern(max int) *Intern {
	return &Intern{max: max, lists: map[string]v1.ResourceList{}, maps: map[string]map[string]string{}, ones: map[string][]string{}}
}

// Volume shares the PV's maps and common strings.
func (t *Intern) Volume(pv *v1.PersistentVolume) {
	pv.Labels = t.Strings(pv.Labels)
	pv.Finalizers = t.one(pv.Finalizers)
	pv.Annotations = t.Strings(pv.Annotations)
	pv.Spec.Capacity = t.Resources(pv.Spec.Capacity)
	pv.Spec.StorageClassName = String(pv.Spec.StorageClassName)
	pv.Spec.AccessModes = accessModes(pv.Spec.AccessModes)
	if r := pv.Spec.ClaimRef; r != nil {
		r.Kind, r.APIVersion, r.Namespace = String(r.Kind), String(r.APIVersion), String(r.Namespace)
	}
	if csi := pv.Spec.CSI; csi != nil {
		csi.Driver, csi.FSType = String(csi.Driver), String(csi.FSType)
		csi.VolumeAttributes = t.Strings(csi.VolumeAttributes)
	}
}

// Claim shares the claim's maps and common strings.
func (t *Intern) Claim(c *v1.PersistentVolumeClaim) {
	c.Namespace = String(c.Namespace)
	c.Labels = t.Strings(c.Labels)
	c.Finalizers = t.one(c.Finalizers)
	c.Annotations = t.Strings(c.Annotations)
	c.Spec.Resources.Requests = t.Resources(c.Spec.Resources.Requests)
	c.Spec.Resources.Limits = t.Resources(c.Spec.Resources.Limits)
	c.Spec.AccessModes = accessModes(c.Spec.AccessModes)
	if s := c.Spec.StorageClassName; s != nil {
		*s = String(*s)
	}
	c.Status.Capacity = t.Resources(c.Status.Capacity)
	c.Status.AllocatedResources = t.Resources(c.Status.AllocatedResources)
	c.Status.AccessModes = accessModes(c.Status.AccessModes)
}

// String returns the process's canonical copy of s.
func String(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// The access-mode lists worth sharing: one mode, as nearly every claim has.
var oneMode = func() map[v1.PersistentVolumeAccessMode][]v1.PersistentVolumeAccessMode {
	m := map[v1.PersistentVolumeAccessMode][]v1.PersistentVolumeAccessMode{}
	for _, a := range []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany, v1.ReadWriteMany, v1.ReadWriteOncePod} {
		m[a] = []v1.PersistentVolumeAccessMode{a}
	}
	return m
}()

func accessModes(modes []v1.PersistentVolumeAccessMode) []v1.PersistentVolumeAccessMode {
	if len(modes) != 1 {
		return modes
	}
	if s, ok := oneMode[modes[0]]; ok {
		// Full slice expression: an append to it copies, never writes into
		// the shared array.
		return s[:1:1]
	}
	return modes
}

// one shares a list of one string (the protection finalizer every PV and
// claim carries).
func (t *Intern) one(l []string) []string {
	if len(l) != 1 {
		return l
	}
	// Full slice expression: an append copies, never writes into the
	// shared array.
	return share(t, t.ones, l[0], l)[:1:1]
}

// Resources returns the table's copy of a list equal to l, l itself the
// first time.
func (t *Intern) Resources(l v1.ResourceList) v1.ResourceList {
	if len(l) == 0 {
		return l
	}
	return share(t, t.lists, resourcesKey(l), l)
}

// Strings returns the table's copy of a map equal to m, m itself the first
// time.
func (t *Intern) Strings(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	return share(t, t.maps, stringsKey(m), m)
}

// share returns what table holds under key, or records v there (emptying
// the table first when it is full).
func share[V any](t *Intern, table map[string]V, key string, v V) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	if have, ok := table[key]; ok {
		return have
	}
	if len(table) >= t.max {
		clear(table)
	}
	table[key] = v
	return v
}

// Verify reports a shared map that no longer equals what it was when it was
// first handed out: someone wrote into a cached object.
func (t *Intern) Verify() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, l := range t.lists {
		if got := resourcesKey(l); got != key {
			return fmt.Errorf("a shared resource list was modified in place: %q, now %q", key, got)
		}
	}
	for key, l := range t.ones {
		if l[0] != key {
			return fmt.Errorf("a shared list was modified in place: %q, now %q", key, l[0])
		}
	}
	for key, m := range t.maps {
		if got := stringsKey(m); got != key {
			return fmt.Errorf("a shared map was modified in place: %q, now %q", key, got)
		}
	}
	return nil
}

// resourcesKey names a resource list by what it serializes to: each
// quantity's string and format (equal values written differently, 1Gi and
// 1073741824, stay apart, so a write of a shared copy sends what the object
// held).
func resourcesKey(l v1.ResourceList) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		q := l[v1.ResourceName(n)]
		b.WriteString(n)
		b.WriteByte(0)
		b.WriteString(q.String())
		b.WriteByte(0)
		b.WriteString(string(q.Format))
		b.WriteByte(1)
	}
	return b.String()
}

func stringsKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(1)
	}
	return b.String()
}
