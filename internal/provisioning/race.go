package provisioning

import "time"

// RaceDelay is how long a node waits, from the moment it first saw an
// unassigned Immediate claim, before it tries to become the claim's owner:
//
//	min(maxDelay, base × (jitter + won) × 2^conflicts)
//
// jitter in [0, 1) spreads nodes that are alike, so that they do not all
// write at once; won, the claims this node became the owner of lately,
// pushes a busy node behind idle ones, so that a burst of claims spreads
// over the nodes instead of going to the fastest; conflicts, the writes
// of this claim that lost to another change, back the node off as the
// external-provisioner's per-claim limiter does. maxDelay bounds the wait
// whatever the load.
func RaceDelay(base, maxDelay time.Duration, jitter float64, won, conflicts int) time.Duration {
	if base <= 0 {
		return 0
	}
	d := float64(base) * (min(max(jitter, 0), 1) + float64(won))
	for range min(conflicts, 32) {
		d *= 2
	}
	if d >= float64(maxDelay) {
		return maxDelay
	}
	return time.Duration(d)
}
