package bench

import (
	"bytes"
	"strings"
	"testing"
)

// A bar ended before its total (a timeout, an interrupt) is not drawn
// full; one that reached it is.
func TestProgressEndsWhereItStood(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, "side")
	p.start("claims Bound", 10)
	p.set(3)
	p.done()
	if s := out.String(); strings.Contains(s, "10/10") || !strings.Contains(s, "3/10") {
		t.Errorf("an interrupted bar shows %q, want 3/10 and not 10/10", s)
	}
	out.Reset()
	p.start("claims Bound", 10)
	p.set(10)
	p.done()
	if s := out.String(); !strings.Contains(s, "10/10") {
		t.Errorf("a finished bar shows %q, want 10/10", s)
	}
}
