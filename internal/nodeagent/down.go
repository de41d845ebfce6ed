package nodeagent

import (
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/volplane/volplane/internal/informerindex"
)

// DownNodes is a set of nodes taken down, as if their kubelets had
// crashed: shared by whoever takes them down (a conformance lab, a test)
// and the agents serving them (Config.Down with its Down method,
// Config.OnUp with its OnUp method). The zero value has no node down.
type DownNodes struct {
	mu    sync.Mutex
	down  map[string]bool
	wakes []func(node string)
}

// Down says whether the node is down.
func (d *DownNodes) Down(node string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.down[node]
}

// Set takes the node down or brings it up. Brought up, every agent that
// registered with OnUp revisits the node and its pods at once, as a
// restarted kubelet does, instead of at its next resync.
func (d *DownNodes) Set(node string, down bool) {
	d.mu.Lock()
	if d.down == nil {
		d.down = map[string]bool{}
	}
	was := d.down[node]
	d.down[node] = down
	wakes := d.wakes
	d.mu.Unlock()
	if was && !down {
		for _, wake := range wakes {
			wake(node)
		}
	}
}

// OnUp registers an agent's wake function. A stopped agent's stays
// registered and does nothing (its queues are shut down).
func (d *DownNodes) OnUp(wake func(node string)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.wakes = append(d.wakes, wake)
}

// down says whether the node's kubelet is down (Config.Down): the agent
// does nothing for it, neither mounting nor tearing down nor writing.
func (a *Agent) down(node string) bool { return a.cfg.Down(node) }

// wake revisits a node that is up again and every pod on it, running or
// not: the agent's view of the node went stale while it was down, as a
// crashed kubelet's did (onPodAdded: what a starting kubelet syncs).
func (a *Agent) wake(node string) {
	if a.nodes[node] == nil {
		return
	}
	a.nodeQ.Add(node)
	pods, err := informerindex.PodsOn(a.podIndex, node)
	if err != nil {
		utilruntime.HandleError(err)
	}
	for _, pod := range pods {
		a.onPodAdded(pod)
	}
}
