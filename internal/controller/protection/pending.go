package protection

import (
	"slices"
	"sync"
)

// pending holds, per namespace, the names of the claims queued since the
// namespace was last taken. The work queue holds the namespaces: it never
// hands one namespace to two workers, so a namespace's claims are processed
// by one batch at a time, and a claim queued during a batch waits for the
// next one.
type pending struct {
	mu    sync.Mutex
	names map[string]map[string]struct{}
}

func newPending() *pending { return &pending{names: map[string]map[string]struct{}{}} }

func (p *pending) add(ns string, names ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	set := p.names[ns]
	if set == nil {
		set = map[string]struct{}{}
		p.names[ns] = set
	}
	for _, n := range names {
		set[n] = struct{}{}
	}
}

// take returns the namespace's queued claims, sorted, and forgets them.
func (p *pending) take(ns string) []string {
	p.mu.Lock()
	set := p.names[ns]
	delete(p.names, ns)
	p.mu.Unlock()
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
