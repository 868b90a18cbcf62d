package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	s3 "github.com/mayflydb/mayfly/storage/s3"
)

// SlateDB's published figures (its benchmark blog post): random writes and
// reads per second and the read p99 on an 8-vCPU machine with a 6 GiB cache.
const (
	slateWrites = 79_000
	slateReads  = 30_000
	slateCPUs   = 8
)

var slateReadP99 = 1060 * time.Microsecond

// ms formats a latency in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

// quantiles formats p50, p99, p999 and max of l.
func quantiles(l *load) string {
	return fmt.Sprintf("p50 %s  p99 %s  p999 %s  max %s", ms(l.hist.Quantile(0.5)), ms(l.hist.Quantile(0.99)),
		ms(l.hist.Quantile(0.999)), ms(l.hist.Quantile(1)))
}

// byKind formats request counts by kind, as per second over elapsed if
// elapsed > 0.
func byKind(d map[string]uint64, elapsed time.Duration) string {
	var parts []string
	for _, k := range requestKinds(d) {
		if elapsed > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f/s", k, float64(d[k])/elapsed.Seconds()))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d", k, d[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// verdict says whether got <= limit.
func verdict(got, limit time.Duration) string {
	if got <= limit {
		return fmt.Sprintf("met (<= %s)", ms(limit))
	}
	return fmt.Sprintf("MISSED (> %s)", ms(limit))
}

// report writes one added round trip's figures.
func report(w io.Writer, p params, r *result) {
	cpus := float64(runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "\n== added round trip %v\n", r.rtt)
	puts := r.syncReqs["put"]
	fmt.Fprintf(w, "synced writes, %d writers, %v: %.0f writes/s (%.0f per core), %.1f writes per WAL PUT\n",
		p.writers, p.writeDur, r.sync.perSec(), r.sync.perSec()/cpus, float64(r.sync.ops)/float64(max(puts, 1)))
	fmt.Fprintf(w, "  Sync latency %s\n", quantiles(r.sync))
	fmt.Fprintf(w, "  target p99 <= 2 RTT + WAL FlushInterval (%v): %s\n", s3.DefaultFlushInterval,
		verdict(r.sync.hist.Quantile(0.99), 2*r.rtt+s3.DefaultFlushInterval))
	fmt.Fprintf(w, "unsynced writes, %d writers, %v: %.0f writes/s (%.0f per core; SlateDB %d per vCPU)\n",
		p.writers, p.writeDur, r.nosync.perSec(), r.nosync.perSec()/cpus, slateWrites/slateCPUs)
	fmt.Fprintf(w, "one unsynced writer at %d writes/s (%.0f/s achieved) beside %d synced writers, %v: its latency %s; synced %.0f writes/s\n",
		p.rate, r.mixedNoSync.perSec(), p.writers, p.writeDur, quantiles(r.mixedNoSync), r.mixedSync.perSec())
	fmt.Fprintf(w, "steady %d writes/s for %v (%.0f/s achieved): %s\n", p.rate, p.steadyDur, r.steady.perSec(), byKind(r.steadyReqs, r.steady.elapsed))
	fmt.Fprintf(w, "  %.1f requests/s, $%.2f per month at S3 Standard list prices (%s)\n",
		float64(requests(r.steadyReqs))/r.steady.elapsed.Seconds(), monthlyCost(r.steadyReqs, r.steady.elapsed), pricesDate)
	fmt.Fprintf(w, "after FlushWAL and compactions, %v waited for the grace period of obsolete tables (%v): %d requests (%s)\n",
		p.grace, objectStoreGrace, requests(r.drainReqs), byKind(r.drainReqs, 0))
	fmt.Fprintf(w, "idle %v after that: %d requests (%s), $%.2f per month; target zero: %s\n",
		r.idle.Round(time.Millisecond), requests(r.idleReqs), byKind(r.idleReqs, 0), monthlyCost(r.idleReqs, r.idle),
		map[bool]string{true: "met", false: "MISSED"}[requests(r.idleReqs) == 0])
	fmt.Fprintf(w, "read fixture: %d keys, %d tables, %.1f MB, loaded in %v; block cache %d MiB\n",
		p.keys, r.fixtureTables, float64(r.fixtureBytes)/1e6, r.fixtureLoad.Round(time.Millisecond), p.blockMiB)
	for _, f := range []struct {
		how string
		f   fetch
	}{{"in 32 KiB reads (io.Copy)", r.copied}, {"with one read of the whole object (as the disk cache fills)", r.whole}} {
		fmt.Fprintf(w, "  copying its largest table (%.1f MB) %s: %s (%s)\n", float64(f.f.size)/1e6, f.how, ms(f.f.took), byKind(f.f.reqs, 0))
	}
	fmt.Fprintf(w, "open with an empty disk cache: %s (%s); first read %s\n", ms(r.open), byKind(r.openReqs, 0), ms(r.first))
	fmt.Fprintf(w, "cold reads (the %d after it): %s; %d tables copied (%s)\n", p.coldReads, quantiles(r.cold), r.coldCopies, byKind(r.coldReqs, 0))
	fmt.Fprintf(w, "warm reads (%d, cache holds every table): %s; %d cache misses, requests: %s\n",
		p.warmReads, quantiles(r.warm), r.warmMisses, byKind(r.warmReqs, 0))
	fmt.Fprintf(w, "  target p99 <= 1 ms: %s; SlateDB's read p99 %s\n", verdict(r.warm.hist.Quantile(0.99), time.Millisecond), ms(slateReadP99))
	fmt.Fprintf(w, "warm read throughput, %d readers, %v: %.0f reads/s (%.0f per core; SlateDB %d per vCPU)\n",
		p.readers, p.readDur, r.readTput.perSec(), r.readTput.perSec()/cpus, slateReads/slateCPUs)
}
