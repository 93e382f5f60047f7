package report

import (
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The plots of commands that vary one thing across runs (a knob's value, the offered load),
// drawn with the suite's chart kit.

// SweepPoint is one value of a swept knob: its CV with the chance band of its own connections,
// and its cost.
type SweepPoint struct {
	X, CV, Lo, Median, Hi, Cost float64
}

// SweepPlot draws the CV against the knob with each value's chance band and the well-spread
// threshold, above the cost (costLabel) against the same axis, logarithmic when every x is
// positive.
func SweepPlot(knob, costLabel string, pts []SweepPoint, threshold float64) (Plot, error) {
	top := newPlot("CV across pods against "+knob, "", "CV of connections across pods")
	top.Legend.Left = true // the CV rises to the right, where a legend would cover it
	bottom := newPlot(costLabel+" against "+knob, knob, costLabel)
	var band plotter.XYs
	cv, median, cost := make(plotter.XYs, len(pts)), make(plotter.XYs, len(pts)), make(plotter.XYs, len(pts))
	ticks := plot.ConstantTicks{}
	logX := len(pts) > 0
	for i, p := range pts {
		cv[i], median[i], cost[i] = plotter.XY{X: p.X, Y: p.CV}, plotter.XY{X: p.X, Y: p.Median}, plotter.XY{X: p.X, Y: p.Cost}
		band = append(band, plotter.XY{X: p.X, Y: p.Hi})
		ticks = append(ticks, plot.Tick{Value: p.X, Label: strconv.FormatFloat(p.X, 'g', -1, 64)})
		logX = logX && p.X > 0
	}
	for i := len(pts) - 1; i >= 0; i-- {
		band = append(band, plotter.XY{X: pts[i].X, Y: pts[i].Lo})
	}
	if len(pts) > 1 {
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return Plot{}, err
		}
		poly.Color, poly.LineStyle.Width = lightBlue, 0
		top.Add(poly)
		top.Legend.Add("chance, 95% band for each value's connections", poly)
	}
	for _, l := range []struct {
		name string
		xy   plotter.XYs
		c    color.Color
		dash bool
	}{{"chance median", median, grey, true}, {"measured CV", cv, blue, false}} {
		line, points, err := plotter.NewLinePoints(l.xy)
		if err != nil {
			return Plot{}, err
		}
		line.Color, points.Color, line.Width = l.c, l.c, vg.Points(1.5)
		if l.dash {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		top.Add(line, points)
		top.Legend.Add(l.name, line)
	}
	if threshold > 0 && len(pts) > 0 {
		th, err := plotter.NewLine(plotter.XYs{{X: pts[0].X, Y: threshold}, {X: pts[len(pts)-1].X, Y: threshold}})
		if err != nil {
			return Plot{}, err
		}
		th.Color, th.Dashes = orange, []vg.Length{vg.Points(2), vg.Points(2)}
		top.Add(th)
		top.Legend.Add(fmt.Sprintf("well-spread threshold %.3f", threshold), th)
	}
	line, points, err := plotter.NewLinePoints(cost)
	if err != nil {
		return Plot{}, err
	}
	line.Color, points.Color, line.Width = orange, orange, vg.Points(1.5)
	bottom.Add(line, points)
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Tick.Marker = ticks
		if logX {
			p.X.Scale = plot.LogScale{}
		}
		p.Y.Min = 0
	}
	png, err := stack(16*vg.Centimeter, []*plot.Plot{top, bottom}, []vg.Length{10 * vg.Centimeter, 6 * vg.Centimeter})
	if err != nil {
		return Plot{}, err
	}
	return Plot{Name: "sweep.png", Title: "Spread and cost against " + knob, PNG: png,
		Caption: "Top: the CV of connections across pods at each value, with the 95% band random placement gives the same number of connections (shaded) and the most CV a well-spread client shows (dashed). Bottom: " + costLabel + ". The x axis is logarithmic when every value is positive."}, nil
}

// Curve is one line of a latency against offered load plot.
type Curve struct {
	Name string
	X, Y []float64
}

// CapacityPlot draws p99 against offered load for each curve, with the SLO as a line.
func CapacityPlot(sloLabel string, slo float64, curves []Curve) (Plot, error) {
	p := newPlot("p99 against offered load", "offered load (requests per second)", "p99 latency (ms, from the intended send time)")
	maxX := 0.0
	for i, c := range curves {
		var xy plotter.XYs
		for j := range c.X {
			if c.Y[j] > 0 { // a log axis has no place for a run without a latency
				xy = append(xy, plotter.XY{X: c.X[j], Y: c.Y[j]})
				maxX = max(maxX, c.X[j])
			}
		}
		if len(xy) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return Plot{}, err
		}
		col := palette[i%len(palette)]
		line.Color, points.Color, line.Width = col, col, vg.Points(1.5)
		p.Add(line, points)
		p.Legend.Add(c.Name, line)
	}
	if slo > 0 && maxX > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: slo}, {X: maxX, Y: slo}})
		if err != nil {
			return Plot{}, err
		}
		l.Color, l.Dashes = grey, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("SLO "+sloLabel, l)
	}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.X.Min = 0
	png, err := render(p, 16*vg.Centimeter, 10*vg.Centimeter)
	if err != nil {
		return Plot{}, err
	}
	return Plot{Name: "capacity.png", Title: "p99 against offered load", PNG: png,
		Caption: "Each point is one open-loop run at a constant arrival rate; latency counts from when each request was due, so a queue cannot hide. The highest rate under the SLO line is the capacity."}, nil
}
