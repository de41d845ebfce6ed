package inflight

import (
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/capacity"
)

const gi = int64(1) << 30

var (
	seg  = capacity.SegmentOf(map[string]string{"topology.volplane.io/node": "a"})
	item = capacity.Item{Segment: seg, Class: "wffc"}
)

func want(bytes int64) Want { return Want{Driver: "d", Class: "wffc", Segment: seg, Bytes: bytes} }

func published(l *Ledger) int64 {
	answers, inFlight := l.Snapshot("d", []capacity.Item{item})
	c, _ := capacity.Published(answers[item.Key()], inFlight[item.Key()])
	return c
}

// Two volumes fit a segment with room for two; the third is refused until
// the driver is asked again, and a volume made stays counted until then.
func TestLedgerCountsUntilTheDriverIsAskedAgain(t *testing.T) {
	l := New()
	if v := l.Reserve("c0", want(gi), true); v.Fit != capacity.Unknown {
		t.Fatalf("without an answer: %s", v)
	}
	l.Release("c0")
	l.Answered("d", "wffc", seg, capacity.Answer{Available: 2 * gi, Maximum: ptr.To(2 * gi)}, l.Asking())
	for _, uid := range []types.UID{"c1", "c2"} {
		if v := l.Reserve(uid, want(gi), true); v.Fit != capacity.Fits {
			t.Fatalf("%s: %s", uid, v)
		}
	}
	if v := l.Reserve("c3", want(gi), true); v.Fit != capacity.NoRoom {
		t.Fatalf("third: %s, want %s", v, capacity.NoRoom)
	}
	if got := published(l); got != 0 {
		t.Errorf("published with two in flight = %d, want 0", got)
	}
	l.Settle("c1", true)  // made: the old answer does not count it
	l.Settle("c2", false) // refused: nothing made
	if got := published(l); got != gi {
		t.Errorf("published after one made, one refused = %d, want 1 GiB", got)
	}
	asked := l.Asking()
	l.Answered("d", "wffc", seg, capacity.Answer{Available: gi, Maximum: ptr.To(gi)}, asked)
	if got := published(l); got != gi {
		t.Errorf("published after the driver counted it = %d, want 1 GiB", got)
	}
	if len(l.flights) != 0 {
		t.Errorf("flights left: %v", l.flights)
	}
}

// A volume made while a question was out is not in that answer.
func TestLedgerAnswerAskedBeforeAVolumeWasMade(t *testing.T) {
	l := New()
	l.Answered("d", "wffc", seg, capacity.Answer{Available: 3 * gi}, l.Asking())
	l.Reserve("c1", want(gi), false)
	asked := l.Asking()
	l.Settle("c1", true)
	l.Answered("d", "wffc", seg, capacity.Answer{Available: 3 * gi}, asked)
	if got := published(l); got != 2*gi {
		t.Errorf("published = %d, want 2 GiB (the made volume is still counted)", got)
	}
}

// Without an answer for the segment nobody subtracts a made volume: it is
// not kept.
func TestLedgerKeepsNothingWithoutCapacity(t *testing.T) {
	l := New()
	l.Reserve("c1", want(gi), false)
	l.Settle("c1", true)
	if len(l.flights) != 0 {
		t.Errorf("flights = %v", l.flights)
	}
}

func TestLedgerTellsItsListeners(t *testing.T) {
	l := New()
	var mu sync.Mutex
	var heard []bool
	l.Subscribe(func(driver, segment string, refresh bool) {
		mu.Lock()
		defer mu.Unlock()
		if driver == "d" && segment == seg.Key() {
			heard = append(heard, refresh)
		}
	})
	l.Answered("d", "wffc", seg, capacity.Answer{Available: gi}, l.Asking())
	l.Reserve("c1", want(gi), false)
	l.Settle("c1", true)
	l.Changed("d", seg)
	if len(heard) != 3 || heard[0] || !heard[1] || !heard[2] {
		t.Errorf("heard = %v, want reserve (no refresh), made (refresh), deleted (refresh)", heard)
	}
}
