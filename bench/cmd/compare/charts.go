package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/mayflydb/mayfly/bench"
)

var engineColor = map[string]color.Color{
	"mayfly":          color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff},
	"pebble":          color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff},
	"badger":          color.RGBA{R: 0x75, G: 0x70, B: 0xb3, A: 0xff},
	"badger-smallmem": color.RGBA{R: 0xa6, G: 0x76, B: 0x1d, A: 0xff},
	"goleveldb":       color.RGBA{R: 0x66, G: 0x66, B: 0x66, A: 0xff},
	"pebble-l6f":      color.RGBA{R: 0x66, G: 0xa6, B: 0x1e, A: 0xff},
	"pebble-bloom":    color.RGBA{R: 0xe7, G: 0x29, B: 0x8a, A: 0xff},
}

// writeCharts draws: ops/s per workload (one panel per workload, its own
// scale), every engine's ratio to Pebble, and ttlchurn's bytes on disk
// over time. It returns the PNG paths.
func writeCharts(all []bench.Result, engs, wls []string, dir string) ([]string, error) {
	ag := aggregate(all)
	var out []string
	if p, err := opsPanels(ag, engs, wls, filepath.Join(dir, "bench-ops-per-workload.png")); err != nil {
		return nil, err
	} else if p != "" {
		out = append(out, p)
	}
	if p, err := ratioChart(ag, engs, wls, filepath.Join(dir, "bench-ratio-vs-pebble.png")); err != nil {
		return nil, err
	} else if p != "" {
		out = append(out, p)
	}
	if p, err := ttlScaleChart(ag, engs, filepath.Join(dir, "bench-ttlscale.png")); err != nil {
		return nil, err
	} else if p != "" {
		out = append(out, p)
	}
	if p, err := churnChart(ag, engs, filepath.Join(dir, "bench-ttlchurn-disk.png")); err != nil {
		return nil, err
	} else if p != "" {
		out = append(out, p)
	}
	return out, nil
}

func opsPanels(ag map[string]map[string]*agg, engs, wls []string, path string) (string, error) {
	var present []string
	for _, w := range wls {
		if ag[w] != nil {
			present = append(present, w)
		}
	}
	if len(present) == 0 {
		return "", nil
	}
	const cols = 4
	rows := (len(present) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, w := range present {
		p := plot.New()
		p.Title.Text = w
		p.Y.Label.Text = "k ops/s"
		p.Y.Min = 0
		var names []string
		x := 0
		for _, e := range engs {
			a := ag[w][e]
			if a == nil {
				continue
			}
			names = append(names, e)
			bc, err := plotter.NewBarChart(plotter.Values{a.med / 1e3}, vg.Points(22))
			if err != nil {
				return "", err
			}
			bc.XMin = float64(x)
			bc.Color = engineColor[e]
			bc.LineStyle.Width = 0
			p.Add(bc)
			// min..max whisker
			if a.max > a.min {
				eb, err := plotter.NewYErrorBars(errPoint{x: float64(x), y: a.med / 1e3, lo: (a.med - a.min) / 1e3, hi: (a.max - a.med) / 1e3})
				if err == nil {
					p.Add(eb)
				}
			}
			x++
		}
		top := 0.0
		for _, e := range engs {
			if a := ag[w][e]; a != nil {
				top = max(top, a.max/1e3)
			}
		}
		p.Y.Max = top * 1.12
		p.NominalX(names...)
		p.X.Tick.Label.Rotation = 0.5
		p.X.Tick.Label.XAlign = draw.XRight
		plots[i/cols][i%cols] = p
	}
	return path, savePanels(plots, vg.Points(float64(cols)*230), vg.Points(float64(rows)*220), path)
}

// savePanels draws a grid of plots (nil cells stay blank) into one w×h PNG.
func savePanels(plots [][]*plot.Plot, w, h vg.Length, path string) error {
	rows, cols := len(plots), len(plots[0])
	img := vgimg.New(w, h)
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(8), PadY: vg.Points(8), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
	canvases := plot.Align(plots, t, dc)
	for r := range plots {
		for c := range plots[r] {
			if plots[r][c] != nil {
				plots[r][c].Draw(canvases[r][c])
			}
		}
	}
	return savePNG(img, path)
}

type errPoint struct{ x, y, lo, hi float64 }

func (e errPoint) Len() int                      { return 1 }
func (e errPoint) XY(int) (float64, float64)     { return e.x, e.y }
func (e errPoint) YError(int) (float64, float64) { return e.lo, e.hi }

func ratioChart(ag map[string]map[string]*agg, engs, wls []string, path string) (string, error) {
	var present []string
	for _, w := range wls {
		if ag[w] != nil && ag[w]["pebble"] != nil && ag[w]["mayfly"] != nil {
			present = append(present, w)
		}
	}
	if len(present) == 0 {
		return "", nil
	}
	p := plot.New()
	p.Title.Text = "ops/s relative to Pebble (median of repetitions; 1.0 = Pebble)"
	p.Y.Label.Text = "× Pebble"
	p.Y.Min = 0
	var others []string
	for _, e := range engs {
		if e != "pebble" {
			others = append(others, e)
		}
	}
	bw := vg.Points(11)
	for i, e := range others {
		vals := make(plotter.Values, len(present))
		for j, w := range present {
			if a := ag[w][e]; a != nil {
				vals[j] = a.med / ag[w]["pebble"].med
			}
		}
		bc, err := plotter.NewBarChart(vals, bw)
		if err != nil {
			return "", err
		}
		bc.Color = engineColor[e]
		bc.LineStyle.Width = 0
		bc.Offset = vg.Length(float64(i)-float64(len(others)-1)/2) * bw
		p.Add(bc)
		p.Legend.Add(e, bc)
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color = engineColor["pebble"]
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	p.Legend.Add("pebble = 1.0", one)
	p.Legend.Top = true
	p.NominalX(present...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Min, p.X.Max = -0.6, float64(len(present))-0.4
	p.Title.Padding = vg.Points(6)
	return path, p.Save(vg.Points(760), vg.Points(380), path)
}

func churnChart(ag map[string]map[string]*agg, engs []string, path string) (string, error) {
	ws := ag["ttlchurn"]
	if ws == nil {
		return "", nil
	}
	p := plot.New()
	p.Title.Text = "ttlchurn: bytes on disk (solid) and live logical bytes (dashed), median repetition"
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "MB"
	p.Y.Min = 0
	n := 0
	for _, e := range engs {
		a := ws[e]
		if a == nil || len(a.medRun.Samples) == 0 {
			continue
		}
		disk := make(plotter.XYs, len(a.medRun.Samples))
		live := make(plotter.XYs, len(a.medRun.Samples))
		for i, s := range a.medRun.Samples {
			disk[i] = plotter.XY{X: s.T, Y: float64(s.DiskBytes) / 1e6}
			live[i] = plotter.XY{X: s.T, Y: float64(s.LiveBytes) / 1e6}
		}
		l1, err := plotter.NewLine(disk)
		if err != nil {
			return "", err
		}
		l1.Color, l1.Width = engineColor[e], vg.Points(1.8)
		l2, err := plotter.NewLine(live)
		if err != nil {
			return "", err
		}
		l2.Color, l2.Width = engineColor[e], vg.Points(1)
		l2.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l1, l2)
		p.Legend.Add(fmt.Sprintf("%s on disk (space amp %.2f)", e, a.medRun.SpaceAmp), l1)
		p.Legend.Add(e+" live", l2)
		n++
	}
	if n == 0 {
		return "", nil
	}
	p.Legend.Top = true
	p.Legend.Left = true
	_ = math.Inf
	return path, p.Save(vg.Points(760), vg.Points(380), path)
}

func savePNG(img *vgimg.Canvas, path string) error {
	f, err := createFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}
