package bench

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows one side's phases and, while it measures, a bar of the
// claims Bound. With no writer it shows nothing.
type progress struct {
	out  io.Writer
	side string
	bar  *progressbar.ProgressBar
}

func newProgress(out io.Writer, side string) *progress {
	return &progress{out: out, side: side}
}

func (p *progress) phase(what string) {
	if p.out == nil {
		return
	}
	p.done()
	fmt.Fprintf(p.out, "%s: %s\n", p.side, what)
}

// start shows a bar counting to total.
func (p *progress) start(what string, total int) {
	if p.out == nil {
		return
	}
	p.done()
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.out),
		progressbar.OptionSetDescription(p.side+": "+what),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("claims"),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionFullWidth(),
	)
}

// set moves the bar to n.
func (p *progress) set(n int) {
	if p.bar != nil {
		_ = p.bar.Set(n)
	}
}

// done ends the bar, if one is showing, on its own line. A bar that did
// not reach its total (a timeout, an interrupt) stays where it was shown
// last: Finish would draw it full.
func (p *progress) done() {
	if p.bar == nil {
		return
	}
	if s := p.bar.State(); s.CurrentNum >= s.Max {
		_ = p.bar.Finish()
	} else {
		_ = p.bar.Exit()
	}
	fmt.Fprintln(p.out)
	p.bar = nil
}

// add moves the bar on by n.
func (p *progress) add(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}
