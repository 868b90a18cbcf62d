package metamorphic

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/internal/s3test"
	"github.com/mayflydb/mayfly/sstable"
)

var (
	flagSeed    = flag.Uint64("seed", 0, "run only this seed (with -seeds: the first seed); 0 means the fixed CI list")
	flagSeeds   = flag.Int("seeds", 0, "run this many consecutive seeds, starting at -seed (or a time-based seed)")
	flagOps     = flag.Int("ops", 0, "ops per run; 0 means 1500 (500 with -short)")
	flagConfig  = flag.String("config", "", "comma-separated configurations to run; empty means all")
	flagHistory = flag.Int("history", 40, "ops of history to print on failure")
)

// ciSeeds run by default.
var ciSeeds = []uint64{1, 2, 3, 4, 42, 1234, 99991, 271828}

// configs are the option sets every seed runs under. The final state must
// be identical under all of them.
var configs = []config{
	{name: "default", local: true},
	{name: "tiny", opts: func(o *mayfly.Options) {
		// Memtables rotate every few dozen writes; blocks hold one or two rows.
		o.MemtableSize = 16 << 10
		o.BlockSize = 64
		o.Compression = sstable.NoCompression
	}},
	{name: "nofilter-nocache", opts: func(o *mayfly.Options) {
		o.DisableBloomFilters = true
		o.DisableBlockCache = true
		o.MemtableSize = 64 << 10
	}},
	{name: "levels", opts: func(o *mayfly.Options) {
		// Many small tables, several levels, constant background compaction.
		// A run's live data is only tens of KiB, so the base-level target
		// and size ratio are set low enough that L0 + L6 is not enough.
		o.MemtableSize = 16 << 10
		o.TargetFileSize = 4 << 10
		o.LBaseMaxBytes = 4 << 10
		o.LevelSizeRatio = 2
		o.L0CompactionThreshold = 2
		o.BlockSize = 512
	}},
	{name: "noauto", opts: func(o *mayfly.Options) {
		o.DisableAutoCompaction = true
		o.MemtableSize = 32 << 10
	}},
	{name: "periodic", opts: func(o *mayfly.Options) {
		// Expiry-driven compaction: periodic compactions and whole-file
		// drops fire within the clock movements of a run.
		o.MemtableSize = 16 << 10
		o.PeriodicCompactionInterval = 2 * time.Second
		o.ExpiredBytesRatio = 0.05
		o.L0CompactionThreshold = 3
	}},
	{name: "crash-mem", crash: true, opts: func(o *mayfly.Options) {
		o.MemtableSize = 16 << 10
		o.L0CompactionThreshold = 2
		o.TargetFileSize = 8 << 10
	}},
}

// s3Config runs on the S3 server named by MAYFLY_S3_URL, a fresh prefix
// per run, with memtables, tables and levels small enough that flushes,
// compactions, manifest versions, WAL segment rotations and (at reopen ops)
// WAL replays all go through the object store many times per run. It is
// not in configs: it runs with MAYFLY_TEST_BACKEND=s3 (next to every other
// config, for the seeds in s3Seeds) or when -config names it. Without a
// server it is left out with a log line, or fails the test under CI=true.
var s3Config = config{name: "s3", s3: true, opts: func(o *mayfly.Options) {
	o.MemtableSize = 16 << 10
	o.TargetFileSize = 8 << 10
	o.LBaseMaxBytes = 8 << 10
	o.LevelSizeRatio = 2
	o.L0CompactionThreshold = 2
	o.BlockSize = 512
}}

// s3Seeds are the seeds MAYFLY_TEST_BACKEND=s3 runs by default: a subset
// of ciSeeds, because a run on S3 costs several times a run in memory (every
// flush, compaction and synced write is a few HTTP requests) and the CI
// time budget is shared. -seed/-seeds override it.
var s3Seeds = ciSeeds[:3]

func s3Selected(t *testing.T) bool {
	return s3test.MustBackend(t) == s3test.S3
}

func selectedConfigs(t *testing.T) []config {
	all := append(configs[:len(configs):len(configs)], s3Config)
	var out []config
	if *flagConfig == "" {
		out = configs
		if s3Selected(t) {
			out = all
		}
	} else {
		for _, name := range strings.Split(*flagConfig, ",") {
			i := slices.IndexFunc(all, func(c config) bool { return c.name == name })
			if i < 0 {
				var names []string
				for _, c := range all {
					names = append(names, c.name)
				}
				t.Fatalf("unknown -config %q; known: %s", name, strings.Join(names, ","))
			}
			out = append(out, all[i])
		}
	}
	if why := s3test.Unavailable(); why != "" && slices.ContainsFunc(out, func(c config) bool { return c.s3 }) {
		if s3test.Required() {
			t.Fatalf("config s3 selected and CI=true: %s", why)
		}
		t.Logf("leaving out config s3: %s", why)
		out = slices.DeleteFunc(slices.Clone(out), func(c config) bool { return c.s3 })
		if len(out) == 0 {
			t.Skip("no configuration left to run")
		}
	}
	return out
}

func selectedSeeds(t *testing.T) []uint64 {
	switch {
	case *flagSeeds > 0:
		base := *flagSeed
		if base == 0 {
			base = uint64(time.Now().UnixNano()) % 1_000_000_000
		}
		t.Logf("running %d seeds from %d", *flagSeeds, base)
		seeds := make([]uint64, *flagSeeds)
		for i := range seeds {
			seeds[i] = base + uint64(i)
		}
		return seeds
	case *flagSeed != 0:
		return []uint64{*flagSeed}
	case s3Selected(t):
		return s3Seeds
	}
	return ciSeeds
}

func numOps() int {
	switch {
	case *flagOps > 0:
		return *flagOps
	case testing.Short():
		return 500
	}
	return 1500
}

// TestMetamorphic runs each seed's op sequence under every configuration,
// compares every read with the model, checks the database, and requires the
// final state to be identical across configurations.
//
// Runs execute on their own goroutines, not as parallel subtests: -parallel
// defaults to GOMAXPROCS, and a run on a local directory spends most of its
// time waiting for fsync, which other runs can use. Results are reported
// as subtests seed=N/CONFIG once a seed's runs are done.
func TestMetamorphic(t *testing.T) {
	cfgs := selectedConfigs(t)
	nops := numOps()
	seeds := selectedSeeds(t)
	root := t.TempDir()
	start := time.Now()

	runSem := make(chan struct{}, 2*runtime.GOMAXPROCS(0)+2)
	seedSem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, seed := range seeds {
		seedSem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-seedSem }()
			results := runSeed(root, seed, nops, cfgs, runSem)
			ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				reportSeed(t, seed, nops, cfgs, results)
			})
			if !ok {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d seeds x %d configs x %d ops in %v; %d seeds failed",
		len(seeds), len(cfgs), nops, time.Since(start).Round(time.Millisecond), failed.Load())
}

// result is the outcome of one run.
type result struct {
	state string
	err   error
	hist  []string // kept only on failure
	stats string
	slow  string
}

// runSeed runs the seed's ops under every configuration concurrently.
func runSeed(root string, seed uint64, nops int, cfgs []config, sem chan struct{}) []*result {
	ops := generate(seed, nops)
	results := make([]*result, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res := &result{}
			results[i] = res
			var dir string
			var err error
			if cfg.s3 {
				dir, err = s3test.NewLocation(fmt.Sprintf("metamorphic-%d-%s", seed, cfg.name))
			} else {
				dir, err = os.MkdirTemp(root, fmt.Sprintf("%d-%s-", seed, cfg.name))
				defer os.RemoveAll(dir)
			}
			if err != nil {
				res.err = err
				return
			}
			r := newRunner(cfg, dir)
			res.state, res.err = r.run(ops)
			if res.err != nil {
				r.cleanup()
				res.hist = r.hist
			}
			res.stats = r.stats.String()
			var slow []string
			for k, d := range r.opTime {
				if d > 250*time.Millisecond {
					slow = append(slow, fmt.Sprintf("%s=%v", k, d.Round(time.Millisecond)))
				}
			}
			slices.Sort(slow)
			res.slow = strings.Join(slow, " ")
		}()
	}
	wg.Wait()
	return results
}

func reportSeed(t *testing.T, seed uint64, nops int, cfgs []config, results []*result) {
	for i, cfg := range cfgs {
		res := results[i]
		t.Run(cfg.name, func(t *testing.T) {
			t.Log(res.stats)
			if res.slow != "" {
				t.Logf("slow op kinds (total wall time): %s", res.slow)
			}
			if res.err != nil {
				t.Fatal(report(seed, nops, cfg.name, res.hist, res.err))
			}
		})
	}
	ref := -1
	for i, res := range results {
		if res.err != nil {
			continue
		}
		if ref < 0 {
			ref = i
			continue
		}
		if res.state != results[ref].state {
			t.Errorf("seed=%d: final state under %q differs from %q: %s\nreproduce: %s",
				seed, cfgs[i].name, cfgs[ref].name, firstDiff(results[ref].state, res.state),
				reproCommand(seed, nops, cfgs[ref].name+","+cfgs[i].name))
		}
	}
}

func report(seed uint64, nops int, cfg string, hist []string, err error) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "seed=%d config=%s: %v\n", seed, cfg, err)
	n := *flagHistory
	from := max(0, len(hist)-n)
	fmt.Fprintf(&sb, "history (ops %d..%d of %d):\n", from, len(hist)-1, nops)
	for _, h := range hist[from:] {
		fmt.Fprintf(&sb, "  %s\n", h)
	}
	ops := nops
	if f, ok := err.(*failure); ok && f.idx >= 0 {
		ops = f.idx + 1
	}
	fmt.Fprintf(&sb, "reproduce: %s", reproCommand(seed, ops, cfg))
	return sb.String()
}

func reproCommand(seed uint64, ops int, cfg string) string {
	return fmt.Sprintf("go test ./tests/metamorphic -run TestMetamorphic -seed=%d -ops=%d -config=%s -v", seed, ops, cfg)
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d: %q vs %q", i, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d lines vs %d lines", len(la), len(lb))
}
