package loop

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// UIDSet is a set of UIDs safe for the event handlers and the workers.
// The snapshot and group loops keep in one the objects the API server
// deleted past their finalizers.
type UIDSet struct {
	mu   sync.Mutex
	uids map[types.UID]struct{}
}

func NewUIDSet() *UIDSet { return &UIDSet{uids: map[types.UID]struct{}{}} }

func (s *UIDSet) Add(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uids[uid] = struct{}{}
}

func (s *UIDSet) Remove(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.uids, uid)
}

func (s *UIDSet) Has(uid types.UID) bool {
	if uid == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.uids[uid]
	return ok
}
