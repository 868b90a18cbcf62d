package main

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/mayflydb/mayfly/bench"
)

// Flags of the ttlscale workload (bench/workloads_ttlscale.go). Its keys
// are -num; run it with -workloads ttlscale -engines mayfly,badger.
var (
	tsDuration = flag.Duration("ttlscale-duration", time.Minute, "ttlscale: real run time (30m for the run of record)")
	tsSpeed    = flag.Float64("ttlscale-speed", 60, "ttlscale: simulated seconds per real second (Mayfly's clock; other engines' TTLs divided by it)")
	tsRate     = flag.Int("ttlscale-rate", 20_000, "ttlscale: puts per real second")
	tsReadRate = flag.Int("ttlscale-readrate", 5_000, "ttlscale: reads per real second")
	tsZipf     = flag.Float64("ttlscale-zipf", 1.1, "ttlscale: Zipf exponent of the TTL in minutes (1 min .. 1 day)")
)

func ttlScaleParams() bench.TTLScaleParams {
	return bench.TTLScaleParams{Duration: *tsDuration, Speed: *tsSpeed, Rate: *tsRate, ReadRate: *tsReadRate, Zipf: *tsZipf}
}

// workerTimeout bounds one worker process: 15 minutes, or longer for a
// ttlscale run or a scale-curve run (-scaletimeout).
func workerTimeout() time.Duration {
	d := 15 * time.Minute
	if strings.Contains(*workloads, "ttlscale") {
		d = max(d, *tsDuration+15*time.Minute)
	}
	if *scaleNs != "" {
		d = max(d, *scaleTimeout)
	}
	return d
}

// ttlScaleTable reports the ttlscale runs (median repetition by puts/s).
func (r *report) ttlScaleTable() string {
	ws := r.agg["ttlscale"]
	if ws == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n| ttlscale | puts/s | simulated h | space amp max (after 1st quarter) | space amp at end | " +
		"expired on disk beyond the bound, max | read p99 µs (all) | read p99 µs per second: median / max |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, e := range r.engs {
		a := ws[e]
		if a == nil {
			continue
		}
		x := a.medRun
		excess := "— (no engine figure)"
		if v, ok := x.Extra["expired_excess_max_bytes"]; ok {
			excess = fmt.Sprintf("%.1f MB", v/1e6)
			if v <= 0 {
				excess = fmt.Sprintf("none (%.1f MB under)", math.Abs(v)/1e6)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.2f | %.2f | %s | %.0f | %.0f / %.0f |\n", e, human(x.OpsPerSec),
			x.Extra["sim_hours"], x.Extra["space_amp_max"], x.Extra["space_amp_final"], excess, x.P99us,
			x.Extra["read_p99_window_median_us"], x.Extra["read_p99_window_max_us"])
	}
	return b.String()
}

// ttlScaleChart draws, per engine, space amplification and read p99 per
// second against simulated hours (median repetition).
func ttlScaleChart(ag map[string]map[string]*agg, engs []string, path string) (string, error) {
	ws := ag["ttlscale"]
	if ws == nil {
		return "", nil
	}
	amp, lat := plot.New(), plot.New()
	amp.Title.Text = "ttlscale: space amplification (disk / live user bytes)"
	lat.Title.Text = "ttlscale: read p99 per real second (µs)"
	for _, p := range []*plot.Plot{amp, lat} {
		p.X.Label.Text = "simulated hours"
		p.Y.Min = 0
		p.Legend.Top = true
	}
	n := 0
	for _, e := range engs {
		a := ws[e]
		if a == nil || len(a.medRun.TTLScale) == 0 {
			continue
		}
		var sa, rl plotter.XYs
		for _, s := range a.medRun.TTLScale {
			if v := s.SpaceAmp(); v > 0 {
				sa = append(sa, plotter.XY{X: s.SimHours, Y: v})
			}
			rl = append(rl, plotter.XY{X: s.SimHours, Y: s.ReadP99us})
		}
		for _, c := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{amp, sa}, {lat, rl}} {
			if len(c.xys) == 0 {
				continue
			}
			l, err := plotter.NewLine(c.xys)
			if err != nil {
				return "", err
			}
			l.Color, l.Width = engineColor[e], vg.Points(1.5)
			c.p.Add(l)
			c.p.Legend.Add(e, l)
		}
		n++
	}
	if n == 0 {
		return "", nil
	}
	return path, savePanels([][]*plot.Plot{{amp, lat}}, vg.Points(980), vg.Points(360), path)
}

// ttlScaleLogExtra is the progress-log suffix of a ttlscale run.
func ttlScaleLogExtra(r bench.Result) string {
	if r.Workload != "ttlscale" {
		return ""
	}
	excess := ""
	if v, ok := r.Extra["expired_excess_max_bytes"]; ok {
		excess = fmt.Sprintf(" expired beyond the bound, max %.1f MB", v/1e6)
	}
	return fmt.Sprintf(" sim %.1fh space amp max %.2f end %.2f read p99/s median %.0fµs max %.0fµs%s",
		r.Extra["sim_hours"], r.Extra["space_amp_max"], r.Extra["space_amp_final"],
		r.Extra["read_p99_window_median_us"], r.Extra["read_p99_window_max_us"], excess)
}
