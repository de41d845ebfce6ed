package groupsnapshot

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// uidSet is a set of UIDs safe for the event handlers and the workers.
type uidSet struct {
	mu   sync.Mutex
	uids map[types.UID]struct{}
}

func newUIDSet() *uidSet { return &uidSet{uids: map[types.UID]struct{}{}} }

func (s *uidSet) add(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uids[uid] = struct{}{}
}

func (s *uidSet) remove(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.uids, uid)
}

func (s *uidSet) has(uid types.UID) bool {
	if uid == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.uids[uid]
	return ok
}
