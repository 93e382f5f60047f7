package report

import (
	"bytes"
	"image/color"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/igwlab/igwlab/runner/analysis"
)

// The chart kinds the plots are made of (horizontal bars, grouped bars, lines, a stack of
// panels) and the PNG rendering, apart from what each plot shows.

func render(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(120), vgimg.UseBackgroundColor(color.White))}
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	return p
}

// hbars draws one horizontal bar per scenario.
func hbars(title, xlabel string, rs []*analysis.Result, value func(*analysis.Result) float64, colorOf func(*analysis.Result) color.Color) (*plot.Plot, error) {
	p := newPlot(title, xlabel, "")
	names := make([]string, len(rs))
	for i, s := range rs {
		names[len(rs)-1-i] = s.Name
		v := plotter.Values{}
		for j := range rs {
			if j == len(rs)-1-i {
				v = append(v, value(s))
			} else {
				v = append(v, 0)
			}
		}
		bc, err := plotter.NewBarChart(v, vg.Points(9))
		if err != nil {
			return nil, err
		}
		bc.Horizontal = true
		bc.LineStyle.Width = 0
		bc.Color = colorOf(s)
		p.Add(bc)
	}
	p.NominalY(names...)
	return p, nil
}

func groupedBars(title, ylabel string, rs []*analysis.Result, series []string, values []func(*analysis.Result) float64) (*plot.Plot, error) {
	p := newPlot(title, "", ylabel)
	w := vg.Points(10)
	for i := range series {
		v := make(plotter.Values, len(rs))
		for j, s := range rs {
			v[j] = values[i](s)
		}
		bc, err := plotter.NewBarChart(v, w)
		if err != nil {
			return nil, err
		}
		bc.Color, bc.LineStyle.Width = palette[i%len(palette)], 0
		bc.Offset = w * vg.Length(float64(i)-float64(len(series)-1)/2)
		p.Add(bc)
		p.Legend.Add(series[i], bc)
	}
	names := make([]string, len(rs))
	for i, s := range rs {
		names[i] = s.Name
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 5
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return p, nil
}

// lines draws one line per named series against time.
func lines(title, ylabel string, xs []float64, ys map[string][]float64) (*plot.Plot, error) {
	p := newPlot(title, "seconds into the window", ylabel)
	names := slices.Sorted(maps.Keys(ys))
	for i, n := range names {
		pts := make(plotter.XYs, 0, len(xs))
		for j, x := range xs {
			if j < len(ys[n]) && !math.IsNaN(ys[n][j]) {
				pts = append(pts, plotter.XY{X: x, Y: ys[n][j]})
			}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = palette[i%len(palette)], vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(n, l)
	}
	p.Y.Min = 0
	return p, nil
}

// stack draws plots one above the other, each with its own height.
func stack(w vg.Length, ps []*plot.Plot, heights []vg.Length) ([]byte, error) {
	var total vg.Length
	for _, h := range heights {
		total += h
	}
	img := vgimg.NewWith(vgimg.UseWH(w, total), vgimg.UseDPI(120), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	var used vg.Length // from the top
	for i, p := range ps {
		p.Draw(draw.Crop(dc, 0, 0, total-used-heights[i], -used))
		used += heights[i]
	}
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
