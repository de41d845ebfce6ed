package capacity

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volplane/volplane/internal/capacity"
	"github.com/volplane/volplane/internal/stacktest"
)

// Six pods, each with its own WaitForFirstConsumer claim, created at once
// on three nodes with room for two volumes each: the scheduler places them
// all before any capacity update reaches it, so some land on a node that
// the others fill. Every pod ends Running, no claim is sent back more than
// once, and no node is asked for a volume once it is known to be full: the
// provisioner's own accounting hands such a node back without calling
// CreateVolume, so the drivers never answer ResourceExhausted.
func TestBurstOfPodsAllRunWithoutAskingAFullNode(t *testing.T) {
	stacktest.Eventually(t, "every node's capacity published", published(t.Context(), waitClass, everyNode(nodeCapacity)), alive)
	w := newWorkload(t)
	var names []string
	for i := range 6 {
		names = append(names, fmt.Sprintf("burst-%d", i))
	}
	for _, n := range names {
		w.start(n, waitClass)
	}
	for _, n := range names {
		w.running(n)
	}
	handedBack := 0
	for _, n := range names {
		count, msgs := w.failures(n)
		if count > 1 {
			t.Errorf("claim %s was sent back %d times, want at most once: %q", n, count, msgs)
		}
		handedBack += int(count)
	}
	perNode := map[string]int{}
	for _, c := range bed.calls.createsOf(w.uids()...) {
		if c.code == codes.ResourceExhausted {
			t.Errorf("node %s was asked for %s when it had no room (ResourceExhausted)", c.node, c.name)
		}
		if c.code == codes.OK {
			perNode[c.node]++
		}
	}
	for node, n := range perNode {
		if n > 2 {
			t.Errorf("node %s made %d volumes, room for 2", node, n)
		}
	}
	if got := w.onNodes(names); len(got) != 3 {
		t.Errorf("pods per node = %v, want two on each of the three", got)
	}
	t.Logf("burst of 6: %d node(s) handed back by the provisioner's accounting, volumes per node %v", handedBack, perNode)
}

// Pods created one after another, each once the one before runs, never
// land on a full node: the scheduler reads the published capacity, which
// already counts every volume made. The seventh finds no node and says so.
func TestPodsOneAfterAnotherNeverLandOnAFullNode(t *testing.T) {
	stacktest.Eventually(t, "every node's capacity published", published(t.Context(), waitClass, everyNode(nodeCapacity)), alive)
	w := newWorkload(t)
	var names []string
	for i := range 6 {
		n := fmt.Sprintf("one-%d", i)
		names = append(names, n)
		w.start(n, waitClass)
		w.running(n)
		if count, msgs := w.failures(n); count != 0 {
			t.Errorf("claim %s was sent back from a full node: %q", n, msgs)
		}
	}
	stacktest.Eventually(t, "every node full", published(t.Context(), waitClass, everyNode(0)), alive)
	w.start("seventh", waitClass)
	stacktest.Eventually(t, "the seventh pod fits no node", w.unschedulable("seventh", "did not have enough free storage"), alive)
	for _, c := range bed.calls.createsOf(w.uids()...) {
		if c.code != codes.OK {
			t.Errorf("node %s answered %s for %s", c.node, c.code, c.name)
		}
	}
	if got := bed.calls.createsOf(w.uid["seventh"]); len(got) != 0 {
		t.Errorf("the seventh claim was sent to a driver: %v", got)
	}
	for node, n := range w.onNodes(names) {
		if n != 2 {
			t.Errorf("node %s runs %d of the pods, want 2", node, n)
		}
	}
}

// Three pods bound to one node with room for two, created at once: two
// run, and the third's claim is never sent to that node's driver: either
// the scheduler already saw the node full, or the provisioner handed the
// node back by its own accounting (a ProvisioningFailed saying so).
func TestThirdClaimOnAFullNodeIsNeverSentToItsDriver(t *testing.T) {
	stacktest.Eventually(t, "every node's capacity published", published(t.Context(), waitClass, everyNode(nodeCapacity)), alive)
	w := newWorkload(t)
	node := bed.cp.Nodes[0]
	names := []string{"pinned-0", "pinned-1", "pinned-2"}
	for _, n := range names {
		w.startOn(n, waitClass, node)
	}
	running := 0
	stacktest.Eventually(t, "two of the pods running", func() string {
		running = 0
		for _, n := range names {
			if stacktest.PodRunning(w.ctx, bed.cp.Client, w.ns, n)() == "" {
				running++
			}
		}
		if running != 2 {
			return fmt.Sprintf("%d running", running)
		}
		return ""
	}, alive)
	waiting := ""
	for _, n := range names {
		if stacktest.PodRunning(w.ctx, bed.cp.Client, w.ns, n)() != "" {
			waiting = n
		}
	}
	stacktest.Eventually(t, "the third pod fits nowhere", w.unschedulable(waiting, "did not have enough free storage"), alive)
	if got := bed.calls.createsOf(w.uid[waiting]); len(got) != 0 {
		t.Errorf("claim %s was sent to a driver: %v", waiting, got)
	}
	for _, c := range bed.calls.createsOf(w.uids()...) {
		if c.code != codes.OK {
			t.Errorf("node %s answered %s for %s", c.node, c.code, c.name)
		}
	}
	if n, msgs := w.failures(waiting); n > 0 && !strings.Contains(strings.Join(msgs, " "), string(capacity.NoRoom)) {
		t.Errorf("claim %s was handed back for another reason: %q", waiting, msgs)
	} else {
		t.Logf("the third claim: %d hand-back(s) by the provisioner's accounting", n)
	}
}
