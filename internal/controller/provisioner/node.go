package provisioner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/provisioning"
)

// NodeDeployment runs the provisioner beside one node's driver, as the
// external-provisioner's --node-deployment does: it handles only the
// claims assigned to its node and deletes only the volumes its node's
// driver holds (internal/provisioning decides which). Claims of an
// Immediate class are assigned by a race: every node that can serve one
// waits provisioning.RaceDelay, then writes its own name as the selected
// node with an Update carrying the claim's resourceVersion; one write wins,
// the others conflict and leave the claim to the winner.
type NodeDeployment struct {
	// NodeName is the Kubernetes node this provisioner runs on.
	NodeName string
	// ImmediateBinding: race for claims of Immediate classes (otherwise
	// only claims the scheduler assigned are provisioned).
	ImmediateBinding bool
	// BaseDelay and MaxDelay shape the race (provisioning.RaceDelay).
	BaseDelay, MaxDelay time.Duration
	// Clock and Jitter are the clock and the randomness (the wall clock
	// and math/rand/v2's Float64 if nil).
	Clock  clock.PassiveClock
	Jitter func() float64
}

// The external-provisioner's defaults.
const (
	DefaultNodeDeploymentBaseDelay = 20 * time.Second
	DefaultNodeDeploymentMaxDelay  = 60 * time.Second
)

// Validate rejects a node deployment that cannot work, with the reason.
func (n NodeDeployment) Validate() error {
	switch {
	case n.NodeName == "":
		return errors.New("node deployment needs the node's name (--node-name, or the NODE_NAME environment variable)")
	case n.BaseDelay < 0:
		return fmt.Errorf("node deployment base delay %s: want zero or more", n.BaseDelay)
	case n.MaxDelay < n.BaseDelay:
		return fmt.Errorf("node deployment max delay %s: want at least the base delay %s", n.MaxDelay, n.BaseDelay)
	}
	return nil
}

// checkNodePool: in node deployment every driver served has exactly one
// endpoint, the node's, with a node service and a node ID (what claims are
// pinned to).
func checkNodePool(pool *csi.Pool, node string) error {
	for _, d := range pool.Drivers() {
		eps := pool.Endpoints(d)
		if len(eps) != 1 {
			return fmt.Errorf("provisioner: node deployment on %s: driver %s has %d endpoints, want exactly the node's one", node, d, len(eps))
		}
		if eps[0].Info.NodeID == "" {
			return fmt.Errorf("provisioner: node deployment on %s: driver %s at %s serves no node service (no node ID): a central driver wants one provisioner beside its controller instead", node, d, eps[0].Address)
		}
	}
	return nil
}

// local is this node as the claim's or PV's driver sees it.
func (c *Controller) local(driver string) provisioning.Local {
	l := provisioning.Local{Node: c.node.NodeName, ImmediateBinding: c.node.ImmediateBinding}
	if eps := c.pool.Endpoints(driver); len(eps) > 0 {
		l.NodeID, l.Topology = eps[0].Info.NodeID, eps[0].Info.Topology
	}
	if n, err := c.read.nodes.Get(c.node.NodeName); err == nil {
		l.NodeLabels = n.Labels
		if l.NodeLabels == nil {
			l.NodeLabels = map[string]string{}
		}
	}
	return l
}

// volumeActionOf is provisioning.DecideVolume, and in node deployment
// only for a PV this node's driver holds: another node's driver would
// answer NotFound for a volume it never made.
func (c *Controller) volumeActionOf(pv *v1.PersistentVolume) (provisioning.VolumeAction, provisioning.Reason) {
	a := provisioning.DecideVolume(pv, c.pool.Serves)
	if a == provisioning.VolumeNone || c.node == nil {
		return a, ""
	}
	v := provisioning.ForVolume(c.local(provisioning.VolumeDriver(pv, c.pool.Serves)), pv)
	if !v.Ours {
		return provisioning.VolumeNone, v.Reason
	}
	return a, ""
}

// race tries to become the owner of an unassigned claim once this node's
// delay is over: an Update writing this node as the selected node, with the
// resourceVersion the decision was made from. A conflict means another
// node won (or the claim changed): the informer brings the new claim,
// which is decided again.
func (c *Controller) race(ctx context.Context, key string, claim *v1.PersistentVolumeClaim) (loop.Result, error) {
	logger := klog.FromContext(ctx)
	if wait := c.memory.races.wait(claim.UID); wait > 0 {
		logger.V(5).Info("Waiting before trying to become the claim's owner", "node", c.node.NodeName, "wait", wait)
		return loop.After(wait), nil
	}
	upd := claim.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[annSelectedNode] = c.node.NodeName
	_, err := c.updateClaim(ctx, upd)
	switch {
	case apierrors.IsConflict(err):
		c.memory.races.conflicted(claim.UID)
		logger.V(3).Info("Did not become the claim's owner: it changed (another node may have won)", "node", c.node.NodeName)
		return loop.Done(), nil
	case apierrors.IsNotFound(err):
		return loop.Done(), nil
	case err != nil:
		return loop.Done(), err
	}
	c.memory.races.won(claim.UID)
	logger.V(2).Info("Became the claim's owner", "node", c.node.NodeName)
	return loop.Again(), nil
}

// raceMemory is what a node remembers of its races: when it first saw each
// claim it races for, with the jitter and conflicts of that claim, and
// when it won lately (within the max delay). An entry goes once its claim
// is settled or deleted.
type raceMemory struct {
	cfg     NodeDeployment
	mu      sync.Mutex
	pending map[types.UID]raceEntry
	wins    []time.Time
}

type raceEntry struct {
	since     time.Time
	jitter    float64
	conflicts int
}

func newRaceMemory(cfg NodeDeployment) *raceMemory {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	return &raceMemory{cfg: cfg, pending: map[types.UID]raceEntry{}}
}

// wait is how long this node still waits before it tries for the claim:
// its delay counts from when it first saw the claim, and grows while the
// node wins others meanwhile.
func (r *raceMemory) wait(uid types.UID) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Clock.Now()
	e, ok := r.pending[uid]
	if !ok {
		e = raceEntry{since: now, jitter: r.cfg.Jitter()}
		r.pending[uid] = e
	}
	d := provisioning.RaceDelay(r.cfg.BaseDelay, r.cfg.MaxDelay, e.jitter, r.recentWins(now), e.conflicts)
	return e.since.Add(d).Sub(now)
}

// recentWins drops the wins older than the max delay and counts the rest.
func (r *raceMemory) recentWins(now time.Time) int {
	cut := now.Add(-r.cfg.MaxDelay)
	keep := r.wins[:0]
	for _, w := range r.wins {
		if w.After(cut) {
			keep = append(keep, w)
		}
	}
	r.wins = keep
	return len(keep)
}

// conflicted starts the claim's wait again, doubled.
func (r *raceMemory) conflicted(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.pending[uid]
	r.pending[uid] = raceEntry{since: r.cfg.Clock.Now(), jitter: r.cfg.Jitter(), conflicts: e.conflicts + 1}
}

// won counts a claim this node now owns.
func (r *raceMemory) won(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, uid)
	r.wins = append(r.wins, r.cfg.Clock.Now())
}

// settled forgets a claim that is no longer raced for (owned by some node,
// or not provisionable any more).
func (r *raceMemory) settled(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, uid)
}
