package provisioner

import (
	"fmt"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/capacity"
	"github.com/volplane/volplane/internal/controller/inflight"
	"github.com/volplane/volplane/internal/provisioning"
)

// knownRoom is a ledger that knows node's segment has avail bytes for class
// "fast".
func knownRoom(node string, avail int64) *inflight.Ledger {
	l := inflight.New()
	l.Answered(testDriver, "fast", capacity.SegmentOf(map[string]string{topoKey: node}),
		capacity.Answer{Available: avail, Maximum: ptr.To(avail)}, l.Asking())
	return l
}

// A selected node that the capacity loop's last answer says cannot hold
// the claim is handed back at once: no CreateVolume, no finalizer, the
// selected-node annotation removed, a ProvisioningFailed with the reason.
func TestSelectedNodeWithoutRoomIsHandedBackWithoutCreateVolume(t *testing.T) {
	w := newWorld(t, claim(selectedNode("b")), class(waitForConsumer))
	w.ledger = knownRoom("b", 512<<10) // the claim asks 1Mi
	w.start()
	w.eventually("selected node handed back", func() string {
		c := w.claim()
		switch {
		case c.Annotations[annSelectedNode] != "":
			return "selected-node still " + c.Annotations[annSelectedNode]
		case hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer) || c.Annotations[provisioning.AnnEndpointNode] != "":
			return "marks of an attempt left"
		case !w.sawEvent(`Warning ProvisioningFailed node "b" cannot hold this claim by the published capacity (` + string(capacity.NoRoom)):
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 0 {
		t.Errorf("backend %v: a driver was asked", b)
	}
}

// A selected node with room provisions as before, and the volume made
// stays counted there until the capacity loop asks the driver again.
func TestSelectedNodeWithRoomProvisionsAndIsCounted(t *testing.T) {
	w := newWorld(t, claim(selectedNode("b")), class(waitForConsumer))
	w.ledger = knownRoom("b", 4<<20)
	w.start()
	w.eventually("PV made", func() string {
		if w.pv("pvc-uid-1") == nil {
			return "no PV"
		}
		return ""
	})
	item := capacity.Item{Segment: capacity.SegmentOf(map[string]string{topoKey: "b"}), Class: "fast"}
	_, inFlight := w.ledger.Snapshot(testDriver, []capacity.Item{item})
	if got := inFlight[item.Key()]; got != 1<<20 {
		t.Errorf("counted on b = %d, want the 1Mi made", got)
	}
}
