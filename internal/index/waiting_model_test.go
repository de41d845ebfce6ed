package index

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
)

// waitingModel is the selection rule by brute force: every waiting claim is
// asked, none is skipped by shape or size, and the best is kept.
type waitingModel struct {
	claims   map[string]*modelClaim
	seq      int
	wokenFor map[string][]string
	woke     map[string]string
}

type modelClaim struct {
	claim *v1.PersistentVolumeClaim
	seq   int
}

func newWaitingModel() *waitingModel {
	return &waitingModel{claims: map[string]*modelClaim{}, wokenFor: map[string][]string{}, woke: map[string]string{}}
}

func (m *waitingModel) update(claim *v1.PersistentVolumeClaim) {
	key := binding.ClaimKey(claim)
	if !binding.IsWaiting(claim) {
		delete(m.claims, key)
		return
	}
	if old, ok := m.claims[key]; ok && binding.ClaimClass(old.claim) == binding.ClaimClass(claim) {
		old.claim = claim
		return
	}
	m.seq++
	m.claims[key] = &modelClaim{claim: claim, seq: m.seq}
}

func (m *waitingModel) remove(key string) { delete(m.claims, key) }

// wake: the idle claim that fits, largest request then oldest; for a new
// (Pending) PV, a claim exactly one PV woke, by the same order, only when no
// idle one fits.
func (m *waitingModel) wake(pv *v1.PersistentVolume, fits func(*v1.PersistentVolumeClaim) bool) (string, bool) {
	if key, ok := m.woke[pv.Name]; ok {
		return key, true
	}
	best, bestBusy := "", false
	for key, mc := range m.claims {
		wakers := len(m.wokenFor[key])
		eligible := pv.Spec.ClaimRef != nil || wakers == 0 || (wakers == 1 && newVolume(pv))
		if !fits(mc.claim) || !eligible {
			continue
		}
		busy := wakers == 1
		if best == "" || (bestBusy && !busy) || (busy == bestBusy && m.before(mc, m.claims[best])) {
			best, bestBusy = key, busy
		}
	}
	if best == "" {
		return "", false
	}
	m.wokenFor[best] = append(m.wokenFor[best], pv.Name)
	m.woke[pv.Name] = best
	return best, true
}

func (m *waitingModel) before(a, b *modelClaim) bool {
	ra, rb := a.claim.Spec.Resources.Requests[v1.ResourceStorage], b.claim.Spec.Resources.Requests[v1.ResourceStorage]
	if c := ra.Cmp(rb); c != 0 {
		return c > 0
	}
	return a.seq < b.seq
}

func (m *waitingModel) release(key string) []string {
	pvs := m.wokenFor[key]
	delete(m.wokenFor, key)
	for _, pv := range pvs {
		delete(m.woke, pv)
	}
	return pvs
}

func (m *waitingModel) forgetVolume(pvName string) {
	key, ok := m.woke[pvName]
	if !ok {
		return
	}
	delete(m.woke, pvName)
	m.wokenFor[key] = slices.DeleteFunc(m.wokenFor[key], func(n string) bool { return n == pvName })
	if len(m.wokenFor[key]) == 0 {
		delete(m.wokenFor, key)
	}
}

// The trees choose what asking every waiting claim would choose, whatever
// the mix of classes, sizes, modes, selectors, pre-bound and non-free PVs,
// and whatever fits says beyond binding.Check.
func TestWakeChoosesWhatTheBruteForceRuleChooses(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { runWaitingModel(t, seed, 10000) })
	}
}

func runWaitingModel(t *testing.T, seed uint64, steps int) {
	g := &waitingGen{rand.New(rand.NewPCG(seed, seed))}
	w, m := NewWaiting(), newWaitingModel()
	for step := range steps {
		op := ""
		switch n := g.Int(100); {
		case n < 30:
			claim := g.claim()
			op = fmt.Sprintf("update %s", describeClaim(claim))
			w.Update(claim)
			m.update(claim)
		case n < 40:
			key := "ns/" + g.claimName()
			op = "remove " + key
			w.Remove(key)
			m.remove(key)
		case n < 75:
			pv := g.volume()
			op = "wake " + describeVolume(pv)
			gk, gok := w.Wake(pv, fitsSometimes(pv))
			mk, mok := m.wake(pv, fitsSometimes(pv))
			if gk != mk || gok != mok {
				t.Fatalf("step %d, %s: woke %q, %v; the rule says %q, %v", step, op, gk, gok, mk, mok)
			}
		case n < 95:
			key := "ns/" + g.claimName()
			op = "release " + key
			if got, want := w.Release(key), m.release(key); !slices.Equal(got, want) {
				t.Fatalf("step %d, %s: returned %v, want %v", step, op, got, want)
			}
		default:
			name := g.volumeName()
			op = "forgetVolume " + name
			w.ForgetVolume(name)
			m.forgetVolume(name)
		}
		compareWaiting(t, step, op, w, m)
	}
}

// fitsSometimes is binding.Check and a coin tossed by the claim's and the
// PV's names: the same answer every time it is asked, yet claims the trees
// cannot rule out by shape or size are still refused, so the walk is tested.
func fitsSometimes(pv *v1.PersistentVolume) func(*v1.PersistentVolumeClaim) bool {
	return func(claim *v1.PersistentVolumeClaim) bool {
		h := fnv.New32a()
		h.Write([]byte(claim.Name + "/" + pv.Name))
		return h.Sum32()%3 != 0 && binding.Check(claim, pv, false).Fits()
	}
}

func compareWaiting(t *testing.T, step int, op string, w *Waiting, m *waitingModel) {
	t.Helper()
	got := w.Keys()
	want := make([]string, 0, len(m.claims))
	for key := range m.claims {
		want = append(want, key)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("step %d, %s: waiting %v, want %v", step, op, got, want)
	}
	if err := w.checkPlaces(); err != nil {
		t.Fatalf("step %d, %s: %v", step, op, err)
	}
}

// checkPlaces says what is wrong with where the claims sit, nil if nothing:
// each placed claim in the tree its busy flag names and only there, busy
// exactly while a PV's wake-up waits for it, no empty partition kept.
func (w *Waiting) checkPlaces() error {
	placed := 0
	for key, wc := range w.byKey {
		if wc.slot != slotFor(len(w.wokenFor[key])) {
			return fmt.Errorf("%s: slot %v, woken by %v", key, wc.slot, w.wokenFor[key])
		}
		if wc.hopeless || wc.slot == fullSlot {
			continue
		}
		placed++
		p := w.shapes[wc.shape.family][wc.shape.modes]
		other := busySlot
		if wc.slot == busySlot {
			other = idleSlot
		}
		if p == nil || !p.tree(wc.slot).Has(wc) || p.tree(other).Has(wc) {
			return fmt.Errorf("%s is not in its tree alone (slot %v)", key, wc.slot)
		}
	}
	inTrees := 0
	for _, parts := range w.shapes {
		for _, p := range parts {
			if p.empty() {
				return fmt.Errorf("an empty partition is kept")
			}
			inTrees += p.idle.Len() + p.busy.Len()
		}
	}
	if inTrees != placed {
		return fmt.Errorf("%d claims in trees, %d placed", inTrees, placed)
	}
	return nil
}

// waitingGen draws claims and PVs from small pools of names and values, so
// that operations keep meeting the same claims and PVs.
type waitingGen struct{ *rand.Rand }

func (g *waitingGen) Int(n int) int { return g.IntN(n) }

func (g *waitingGen) claimName() string  { return fmt.Sprintf("c%d", g.IntN(30)) }
func (g *waitingGen) volumeName() string { return fmt.Sprintf("pv%d", g.IntN(40)) }

func pick[T any](g *waitingGen, values ...T) T { return values[g.IntN(len(values))] }

func (g *waitingGen) claim() *v1.PersistentVolumeClaim {
	c := pendingClaim(g.claimName(), pick(g, "gold", "gold", "silver", ""))
	if size := pick(g, "", "1Gi", "1024Mi", "2Gi", "3Gi", "5Gi"); size != "" {
		c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}
	}
	c.Spec.AccessModes = g.modes(3)
	if g.IntN(20) == 0 {
		c.Spec.AccessModes = append(c.Spec.AccessModes, "ReadWriteSometimes")
	}
	c.Spec.VolumeMode = pick(g, nil, nil, ptrTo(v1.PersistentVolumeFilesystem), ptrTo(v1.PersistentVolumeBlock))
	c.Spec.VolumeAttributesClassName = pick(g, nil, nil, nil, ptrTo("fast"))
	switch g.IntN(20) {
	case 0, 1, 2:
		c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": pick(g, "a", "b")}}
	case 3:
		c.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Bogus"}}}
	}
	if g.IntN(20) == 0 {
		c.Spec.VolumeName = "somewhere"
	}
	return c
}

func (g *waitingGen) volume() *v1.PersistentVolume {
	pv := freeVolume(g.volumeName(), pick(g, "gold", "gold", "silver", ""))
	pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse(pick(g, "0", "1Gi", "2Gi", "4Gi", "8Gi"))}
	pv.Spec.AccessModes = g.modes(3 / 2.0)
	pv.Spec.VolumeMode = pick(g, nil, nil, ptrTo(v1.PersistentVolumeFilesystem), ptrTo(v1.PersistentVolumeBlock))
	pv.Spec.VolumeAttributesClassName = pick(g, nil, nil, nil, ptrTo("fast"))
	if tier := pick(g, "", "a", "b"); tier != "" {
		pv.Labels = map[string]string{"tier": tier}
	}
	pv.Status.Phase = pick(g, v1.VolumeAvailable, v1.VolumeAvailable, v1.VolumePending, v1.VolumePending, v1.VolumeReleased)
	if g.IntN(6) == 0 {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: g.claimName()}
	}
	return pv
}

// modes draws a subset of the three common access modes, each in it with
// probability 1/oneIn: claims ask for fewer than PVs offer, so that they
// often meet.
func (g *waitingGen) modes(oneIn float64) []v1.PersistentVolumeAccessMode {
	var modes []v1.PersistentVolumeAccessMode
	for _, m := range []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany, v1.ReadWriteMany} {
		if g.Float64()*oneIn < 1 {
			modes = append(modes, m)
		}
	}
	return modes
}

func ptrTo[T any](v T) *T { return &v }

func describeClaim(c *v1.PersistentVolumeClaim) string {
	size := c.Spec.Resources.Requests[v1.ResourceStorage]
	return fmt.Sprintf("%s class %q size %s modes %v volumeMode %v vac %v selector %v volumeName %q",
		c.Name, binding.ClaimClass(c), size.String(), c.Spec.AccessModes, deref(c.Spec.VolumeMode),
		deref(c.Spec.VolumeAttributesClassName), c.Spec.Selector, c.Spec.VolumeName)
}

func describeVolume(pv *v1.PersistentVolume) string {
	capacity := binding.Capacity(pv)
	return fmt.Sprintf("%s class %q capacity %s modes %v volumeMode %v vac %v labels %v phase %s claimRef %v",
		pv.Name, binding.VolumeClass(pv), capacity.String(), pv.Spec.AccessModes, deref(pv.Spec.VolumeMode),
		deref(pv.Spec.VolumeAttributesClassName), pv.Labels, pv.Status.Phase, pv.Spec.ClaimRef)
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
