package bench

import (
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Size of bound.png.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
)

// boundPlot draws r's curves, claims Bound over seconds since the
// controller started, one line per Side named in the legend, as a PNG.
func boundPlot(r Report) (io.WriterTo, error) {
	p := plot.New()
	p.Title.Text = r.Title()
	p.X.Label.Text = "seconds since the controller started"
	p.Y.Label.Text = "claims Bound"
	p.X.Min, p.Y.Min = 0, 0
	// Cumulative curves rise to the top left: the bottom right is free.
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), vg.Points(8)
	p.Add(plotter.NewGrid())

	// Room above the highest count, the pairs included, so a line that
	// reaches them does not run along the frame.
	top := r.Pairs
	for _, s := range r.Sides {
		for _, pt := range s.Curve {
			top = max(top, pt.Bound)
		}
	}
	if top > 0 {
		p.Y.Max = 1.05 * float64(top)
	}

	for i, s := range r.Sides {
		// Nothing is Bound when the controller starts; the count then holds
		// until the next point, so the line steps after each point.
		xys := make(plotter.XYs, 0, len(s.Curve)+1)
		if len(s.Curve) == 0 || s.Curve[0].Seconds > 0 {
			xys = append(xys, plotter.XY{})
		}
		for _, pt := range s.Curve {
			xys = append(xys, plotter.XY{X: pt.Seconds, Y: float64(pt.Bound)})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.StepStyle = plotter.PostStep
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	return p.WriterTo(plotWidth, plotHeight, "png")
}
