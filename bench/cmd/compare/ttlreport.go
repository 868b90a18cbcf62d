package main

import (
	"fmt"
	"strings"

	"github.com/mayflydb/mayfly/bench"
)

// ttlTargets are issue 19's goals for Mayfly's TTL operations: ops/s at
// least this many times Badger's and Pebble's.
var ttlTargets = map[string]struct{ badger, pebble float64 }{
	"session":     {3, 1.5},
	"idempotency": {4, 1.2},
	"onetime":     {4, 1.2},
}

// maxTouchPutWAL is the goal for WAL bytes per touch over WAL bytes per put.
const maxTouchPutWAL = 0.1

// ttlTables reports the TTL-operation workloads that were run: ops/s with
// Mayfly's ratios to Badger and Pebble against the targets, then the bytes
// written per Touch and per Expire.
func (r *report) ttlTables() string {
	t := r.ratioTable("TTL operations", bench.IsTTLWorkload, func(w string, rb, rp float64, okb, okp bool) (string, string) {
		if t, has := ttlTargets[w]; has && okb && okp {
			return fmt.Sprintf("≥ %.0fx badger, ≥ %.1fx pebble", t.badger, t.pebble), yesNo(rb >= t.badger && rp >= t.pebble)
		}
		if m := r.agg[w]["mayfly"]; w == "touchwal" && m != nil {
			return fmt.Sprintf("touch WAL bytes ≤ %.1f of a put", maxTouchPutWAL),
				yesNo(medianExtra(m, "touch_put_wal_ratio") <= maxTouchPutWAL)
		}
		return "—", "—"
	})
	if t == "" {
		return ""
	}
	return t + r.ttlBytesTable()
}

// ratioTable is the table of the workloads that ran and pass keep: per
// engine ops/s median (min..max) with the median run's p99, Mayfly's
// ratios to Badger and Pebble, and the target and verdict goal returns
// for the workload; "" when none ran.
func (r *report) ratioTable(title string, keep func(string) bool,
	goal func(w string, rb, rp float64, okb, okp bool) (target, met string)) string {
	var ran []string
	for _, w := range r.wls {
		if r.agg[w] != nil && keep(w) {
			ran = append(ran, w)
		}
	}
	if len(ran) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n" + title + ", ops/s median (min..max) and p99 latency of the median run:\n\n| workload |")
	for _, e := range r.engs {
		b.WriteString(" " + e + " |")
	}
	b.WriteString(" mayfly / badger | mayfly / pebble | target | met |\n|---|")
	for range r.engs {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|---|---|\n")
	for _, w := range ran {
		b.WriteString("| " + w + " |")
		for _, e := range r.engs {
			c := r.cell(w, e)
			if a := r.agg[w][e]; a != nil {
				c += fmt.Sprintf(", p99 %.0f µs", a.medRun.P99us)
			}
			b.WriteString(" " + c + " |")
		}
		rb, okb := r.ratio(w, "mayfly", "badger")
		rp, okp := r.ratio(w, "mayfly", "pebble")
		tgt, met := goal(w, rb, rp, okb, okp)
		b.WriteString(fmt.Sprintf(" %s | %s | %s | %s |\n", ratioCell(rb, okb), ratioCell(rp, okp), tgt, met))
	}
	return b.String()
}

func ratioCell(v float64, ok bool) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.2fx", v)
}

// medianExtra is the median over a's runs of the extra figure k.
func medianExtra(a *agg, k string) float64 {
	return median(a.runs, func(x bench.Result) float64 { return x.Extra[k] })
}

// ttlBytesTable: WAL bytes per touch and per put (touchwal), and WAL and
// flushed table bytes per Expire and per full rewrite (expirebytes),
// medians over the repetitions.
func (r *report) ttlBytesTable() string {
	var b strings.Builder
	if tw := r.agg["touchwal"]; tw != nil {
		b.WriteString("\nWAL bytes per Touch of a hot set (1000 keys) against a put of the same row, medians:\n\n")
		b.WriteString("| engine | WAL bytes / put | WAL bytes / touch | touch / put | touches written | bytes / touch written |\n|---|---:|---:|---:|---:|---:|\n")
		for _, e := range r.engs {
			a := tw[e]
			if a == nil {
				continue
			}
			ops := median(a.runs, func(x bench.Result) float64 { return float64(x.Ops) })
			written := ops - medianExtra(a, "touches_coalesced")
			perTouch := medianExtra(a, "wal_bytes_per_touch")
			perWritten := "—"
			if written > 0 {
				perWritten = fmt.Sprintf("%.1f", perTouch*ops/written)
			}
			b.WriteString(fmt.Sprintf("| %s | %.1f | %.3f | %.4f | %.0f of %.0f | %s |\n", e,
				medianExtra(a, "wal_bytes_per_put"), perTouch, medianExtra(a, "touch_put_wal_ratio"), written, ops, perWritten))
		}
	}
	if m := r.agg["expirebytes"]["mayfly"]; m != nil {
		b.WriteString(fmt.Sprintf("\nBytes written per Expire of a %.0f-byte value against a full rewrite (Mayfly, medians): "+
			"WAL %.1f vs %.1f (%.3f); flushed tables %.1f vs %.1f (%.3f).\n",
			medianExtra(m, "value_bytes"), medianExtra(m, "expire_wal_bytes"), medianExtra(m, "put_wal_bytes"),
			medianExtra(m, "expire_put_wal_ratio"), medianExtra(m, "expire_table_bytes"), medianExtra(m, "put_table_bytes"),
			medianExtra(m, "expire_put_table_ratio")))
	}
	return b.String()
}

// ttlLogExtra is the progress-log suffix of a TTL workload's run.
func ttlLogExtra(r bench.Result) string {
	x := r.Extra
	switch r.Workload {
	case "session":
		return fmt.Sprintf(" getex %.0f new %.0f coalesced %.0f", x["getex"], x["sessions_created"], x["touches_coalesced"])
	case "idempotency":
		return fmt.Sprintf(" duplicates %.0f refused %.0f", x["duplicates"], x["refused"])
	case "onetime":
		return fmt.Sprintf(" tokens %.0f wins %.0f", x["tokens"], x["wins"])
	case "touchwal":
		return fmt.Sprintf(" WAL/touch %.3f WAL/put %.1f ratio %.4f", x["wal_bytes_per_touch"], x["wal_bytes_per_put"], x["touch_put_wal_ratio"])
	case "expirebytes":
		return fmt.Sprintf(" expire/put WAL %.3f tables %.3f", x["expire_put_wal_ratio"], x["expire_put_table_ratio"])
	}
	return ""
}
