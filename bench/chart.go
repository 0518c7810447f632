package main

import (
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var palette = []color.RGBA{
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // lethe: red
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// drawChart plots the worst read latency per 10 ms over time, around the
// instant N/2 items expire, one line per store.
func drawChart(path string, series map[string][]point, kinds []storeKind) error {
	p := plot.New()
	p.Title.Text = "W5: worst read latency per 10 ms while N/2 expired items are purged"
	p.X.Label.Text = "seconds since the items expired"
	p.Y.Label.Text = "latency from intended start (µs, log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for i, k := range kinds {
		pts, ok := series[k.name]
		if !ok {
			continue
		}
		var xys plotter.XYs
		for _, pt := range pts {
			if pt.t >= -1 { // one second before the expiry is enough to see the baseline
				xys = append(xys, plotter.XY{X: pt.t, Y: max(pt.us, 0.1)})
			}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1)
		if strings.HasPrefix(k.name, "lethe") {
			l.Width = vg.Points(2)
		}
		p.Add(l)
		p.Legend.Add(k.name, l)
	}
	return p.Save(10*vg.Inch, 5*vg.Inch, path)
}
