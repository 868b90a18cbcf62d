package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mayflydb/mayfly/bench"
)

// The fillsync target has two parts: at least Pebble's rate, and at least
// minSyncShare of this disk's own small synced write rate (the fdatasync
// reference: 4 KiB write + fdatasync into a preallocated file). The disk is
// shared and its rate moves by 2x between minutes, so the reference is
// measured right before and right after each engine's fillsync run and the
// run is compared with the mean of those two ("adjacent" reference).
const minSyncShare = 0.8

// setShare records in r, a fillsync result, the reference runs taken right
// before and after it and r's share of their mean rate.
func setShare(r *bench.Result, before, after bench.Result) {
	if r.Extra == nil {
		r.Extra = map[string]float64{}
	}
	ref, share := adjacentShare(r.OpsPerSec, before.OpsPerSec, after.OpsPerSec)
	r.Extra["fdatasync_ref_before_ops_per_sec"] = before.OpsPerSec
	r.Extra["fdatasync_ref_after_ops_per_sec"] = after.OpsPerSec
	r.Extra["fdatasync_ref_ops_per_sec"] = ref
	r.Extra["fdatasync_share"] = share
}

// adjacentShare returns the reference rate for a run bracketed by
// reference rates before and after (their mean) and the run's share of it
// (0 when there is no reference).
func adjacentShare(ops, before, after float64) (ref, share float64) {
	ref = (before + after) / 2
	if ref <= 0 {
		return 0, 0
	}
	return ref, ops / ref
}

// syncShare is one fillsync run against its adjacent references.
type syncShare struct {
	rep                int
	engine             string
	ops, before, after float64
	ref, share         float64
	cpu, refCPU        float64 // CPU µs per op of the run and of its references (mean); 0 if not recorded
	// p50Share is the references' mean median latency over the run's: on
	// a shared disk the rate is set by the other tenants' tail latencies
	// (p99 of 10-40 ms at load 8-12), the median much less so.
	p50Share float64
}

// syncShares pairs every fillsync run with the reference runs taken next
// to it (same repetition, RefFor naming its engine), in repetition and
// engine order. Runs without both references (results files from before
// adjacent references) are left out.
func (r *report) syncShares() []syncShare {
	refs := map[[3]string]bench.Result{}
	for _, x := range r.fsync {
		if x.RefFor != "" {
			refs[[3]string{fmt.Sprint(x.Rep), x.RefFor, x.RefWhen}] = x
		}
	}
	var out []syncShare
	for _, e := range r.engs {
		a := r.agg["fillsync"][e]
		if a == nil {
			continue
		}
		for _, x := range a.runs {
			b, okb := refs[[3]string{fmt.Sprint(x.Rep), e, "before"}]
			f, oka := refs[[3]string{fmt.Sprint(x.Rep), e, "after"}]
			if !okb || !oka {
				continue
			}
			ref, share := adjacentShare(x.OpsPerSec, b.OpsPerSec, f.OpsPerSec)
			out = append(out, syncShare{rep: x.Rep, engine: e, ops: x.OpsPerSec, before: b.OpsPerSec, after: f.OpsPerSec,
				ref: ref, share: share, cpu: x.Extra["cpu_us_per_op"],
				refCPU: (b.Extra["cpu_us_per_op"] + f.Extra["cpu_us_per_op"]) / 2})
			if x.P50us > 0 {
				out[len(out)-1].p50Share = (b.P50us + f.P50us) / 2 / x.P50us
			}
		}
	}
	slices.SortStableFunc(out, func(a, b syncShare) int { return a.rep - b.rep })
	return out
}

// medianShare returns the median of engine e's per-repetition shares of
// its adjacent reference, and whether there were any.
func medianShare(ss []syncShare, e string) (float64, bool) {
	var v []float64
	for _, s := range ss {
		if s.engine == e {
			v = append(v, s.share)
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	return medianOf(v), true
}

// medianOf returns the median of v (0 for none), leaving v as it is.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// syncShareTable lists every fillsync run with its adjacent references and
// share, then each engine's median share and how much the reference moved.
func (r *report) syncShareTable() string {
	ss := r.syncShares()
	if len(ss) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nfillsync against the disk reference measured right before and after it (4 KiB write + fdatasync, " +
		"preallocated file, same op count, sibling directory); share = fillsync ops/s / mean of before and after " +
		"(the target's figure); p50 share = the references' mean p50 latency / fillsync's p50 latency:\n\n")
	b.WriteString("| rep | engine | fillsync ops/s | reference before | reference after | share | p50 share | CPU µs/op (reference) |\n" +
		"|---:|---|---:|---:|---:|---:|---:|---:|\n")
	var moves []float64
	for _, s := range ss {
		cpu := "—"
		if s.cpu > 0 && s.refCPU > 0 {
			cpu = fmt.Sprintf("%.0f (%.0f)", s.cpu, s.refCPU)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.0f%% | %.0f%% | %s |\n",
			s.rep, s.engine, human(s.ops), human(s.before), human(s.after), 100*s.share, 100*s.p50Share, cpu)
		moves = append(moves, math.Abs(s.after-s.before)/s.ref)
	}
	b.WriteString("\n")
	for _, e := range r.engs {
		var reps []string
		var p50s []float64
		for _, s := range ss {
			if s.engine == e {
				reps = append(reps, fmt.Sprintf("%.0f%%", 100*s.share))
				p50s = append(p50s, s.p50Share)
			}
		}
		if m, ok := medianShare(ss, e); ok {
			fmt.Fprintf(&b, "- %s: median share **%.0f%%** (per rep %s); median p50 share %.0f%%\n",
				e, 100*m, strings.Join(reps, ", "), 100*medianOf(p50s))
		}
	}
	fmt.Fprintf(&b, "- reference: before and after one run differ by %.0f%% of their mean at the median, %.0f%% at most\n",
		100*medianOf(moves), 100*slices.Max(moves))
	return b.String()
}
