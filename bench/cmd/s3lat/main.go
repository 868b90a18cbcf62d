// Command s3lat runs Mayfly on an S3-protocol server through an in-process
// toxiproxy proxy that adds a round trip to every request and limits the
// bandwidth of every connection, and reports, per added round trip:
// synced-write throughput and latency with group commit, unsynced-write
// throughput, the latency of an unsynced writer beside synced ones,
// requests by kind and their monthly price for a steady write rate and for
// the idle database that follows it (once obsolete tables' grace period
// has passed), and point reads with the
// disk cache, cold (right after an open with an empty cache) and warm
// (once it holds every table).
//
//	eval "$(bash scripts/s3/start-versitygw.sh)"
//	cd bench && go run ./cmd/s3lat -rtt 20ms,50ms
//
// The server and its credentials come from MAYFLY_S3_URL and AWS_* as for
// tests/s3. Every run writes under a new prefix of MAYFLY_S3_URL's and
// leaves its objects there. The report goes to stdout and, with the
// command line and machine at its top, to -results/results-<time>.txt.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

var (
	rtts      = flag.String("rtt", "20ms,50ms", "round trips added to every request, comma-separated: one run each")
	bandwidth = flag.Float64("bandwidth", 100, "MB/s (10^6 bytes) per connection and direction; 0: unlimited")
	valueSize = flag.Int("value", 100, "value size in bytes")
	writers   = flag.Int("writers", 32, "goroutines of the synced and of the unsynced write phase")
	writeDur  = flag.Duration("writetime", 8*time.Second, "length of the synced and of the unsynced write phase")
	rate      = flag.Int("rate", 10_000, "writes per second of the steady phase")
	steadyDur = flag.Duration("steadytime", 15*time.Second, "length of the steady phase")
	idleDur   = flag.Duration("idletime", 10*time.Second, "length of the idle phase")
	keys      = flag.Int("keys", 200_000, "keys of the read fixture (and the key space of the writes)")
	coldReads = flag.Int("coldreads", 2_000, "reads timed right after an open with an empty disk cache")
	warmReads = flag.Int("warmreads", 200_000, "reads timed once the disk cache holds every table")
	readers   = flag.Int("readers", 4, "goroutines of the read throughput phase")
	readDur   = flag.Duration("readtime", 5*time.Second, "length of the read throughput phase")
	blockMiB  = flag.Int64("blockcache", 4, "block cache of the read phases, MiB (smaller than the fixture, so that warm reads reach the disk cache)")
	traceDir  = flag.String("trace", "", "directory for runtime traces of the synced and unsynced write phases (go tool trace -pprof=sync ...)")
	results   = flag.String("results", "results", "directory for the report file ('' for none)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "s3lat:", err)
		os.Exit(1)
	}
}

func run() error {
	base := os.Getenv("MAYFLY_S3_URL")
	if base == "" {
		return fmt.Errorf("MAYFLY_S3_URL is not set: eval \"$(bash scripts/s3/start-versitygw.sh)\" first")
	}
	var list []time.Duration
	for _, s := range strings.Split(*rtts, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-rtt %q: %w", s, err)
		}
		list = append(list, d)
	}
	if *writers < 1 || *readers < 1 || *rate < 1 || *keys < 1 || *valueSize < 1 || *coldReads < 0 || *warmReads < 1 || *blockMiB < 0 {
		return fmt.Errorf("-writers, -readers, -rate, -keys, -value and -warmreads must be positive, -coldreads and -blockcache not negative")
	}
	tmp, err := os.MkdirTemp("", "s3lat-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	stamp := time.Now().UTC().Format("20060102T150405Z")
	p := params{
		base: base, prefix: "s3lat-" + stamp, bandwidth: int64(*bandwidth * 1e6), valueSize: *valueSize,
		writers: *writers, writeDur: *writeDur, rate: *rate, steadyDur: *steadyDur, idleDur: *idleDur,
		grace: objectStoreGrace + 2*time.Second,
		keys:  *keys, coldReads: *coldReads, warmReads: *warmReads, readers: *readers, readDur: *readDur, tmp: tmp,
		blockMiB: *blockMiB, traceDir: *traceDir,
	}
	began := time.Now()
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "[%5.0fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, a...))
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# cd bench && go run ./cmd/s3lat %s\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&out, "# %s; Mayfly %s; %s\n", machine(), commit(), time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&out, "# server: local versitygw behind an in-process toxiproxy (latency toxic: half the added round trip each way; bandwidth toxic: %g MB/s per connection each way)\n", *bandwidth)
	for _, rtt := range list {
		t0 := time.Now()
		r, err := runOne(p, rtt, logf)
		if err != nil {
			return fmt.Errorf("added round trip %v: %w", rtt, err)
		}
		report(&out, p, r)
		logf("%v done in %v", rtt, time.Since(t0).Round(time.Second))
	}
	os.Stdout.Write(out.Bytes())
	if *results == "" {
		return nil
	}
	if err := os.MkdirAll(*results, 0o755); err != nil {
		return err
	}
	path := filepath.Join(*results, "results-"+stamp+".txt")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		return err
	}
	logf("report in %s", path)
	return nil
}

// machine names this machine: CPU model and count.
func machine() string {
	model := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs (GOMAXPROCS %d), %s", model, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
}

// commit names the checked-out Mayfly commit, or "unknown".
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+changes"
	}
	return c
}
