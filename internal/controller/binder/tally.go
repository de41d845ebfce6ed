package binder

import (
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/index"
)

// tally returns the claim's tally over every PV held: nil until counted,
// then the remembered one unless a count is due (index.Tallies says when).
// Match runs outside c.mu: the candidates are informer objects, never
// modified, and one claim is synced by one worker at a time.
func (c *Controller) tally(claim *v1.PersistentVolumeClaim) *binding.Tally {
	key, now := binding.ClaimKey(claim), c.clock.Now()
	c.mu.Lock()
	source, total := c.index.TallySource(claim), c.index.Len()
	report, due := c.tallies.Look(key, now, source, total, c.resync)
	if !due {
		c.mu.Unlock()
		return report
	}
	candidates := c.index.Candidates(claim)
	c.mu.Unlock()
	chosen, verdicts := binding.Match(claim, candidates, false)
	count := index.Count{From: source, Candidates: len(candidates),
		Tally: binding.Count(verdicts, chosen != nil, 0), Total: total}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tallies.Counted(key, now, count)
}
