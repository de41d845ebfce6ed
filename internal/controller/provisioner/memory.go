package provisioner

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// createMemory holds, per claim UID, the plan of the last CreateVolume this
// process sent whose outcome is not settled: in flight, or answered in a
// way that leaves open whether a volume exists (a timeout, say). It is the
// provisioner's own knowledge, which no user can write: the cleanup of a
// claim prefers it to the request recorded on the claim, and it cleans up
// after a claim that went away without our finalizer holding it
// (kubernetes/kubernetes#77988: deleted while the finalizer was being
// added, or with it removed by hand), from the delete event.
type createMemory struct {
	mu    sync.Mutex
	plans map[types.UID]*remembered
}

// remembered is one create: the plan sent, the claim it was for (the last
// copy seen, for events), and whether the call is still running.
type remembered struct {
	plan     plan
	claim    *v1.PersistentVolumeClaim
	inFlight bool
}

func newCreateMemory() *createMemory { return &createMemory{plans: map[types.UID]*remembered{}} }

// sending notes a create about to be sent.
func (m *createMemory) sending(claim *v1.PersistentVolumeClaim, p plan) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.plans[claim.UID] = &remembered{plan: p, claim: claim, inFlight: true}
}

// answered notes that the create of the claim returned; its outcome is
// still open until settled.
func (m *createMemory) answered(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.plans[uid]; r != nil {
		r.inFlight = false
	}
}

// settled forgets the claim's create: a PV owns the volume, or no volume
// can exist (a final answer, or it was deleted).
func (m *createMemory) settled(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.plans, uid)
}

// get is a copy of what is remembered for the claim; ok is false if
// nothing is.
func (m *createMemory) get(uid types.UID) (remembered, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.plans[uid]
	if r == nil {
		return remembered{}, false
	}
	return *r, true
}
