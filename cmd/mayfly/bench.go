package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/urfave/cli/v3"
)

func benchCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:  "bench",
		Usage: "run a quick db_bench-style benchmark: fillseq, fillrandom, readrandom, scan, ttlchurn",
		Description: "fillseq writes --keys keys in order into a new database (DIR/kv), fillrandom\n" +
			"overwrites as many random keys of the same range, readrandom reads as many\n" +
			"random keys, scan iterates over all of them. Writes are batched (--batch) and\n" +
			"not synced; the memtable is 4 MiB so that flushes and compactions happen.\n\n" +
			"ttlchurn writes --keys new keys with a 10s TTL into another database (DIR/ttlchurn)\n" +
			"under a manual clock that advances 1s per batch of writes, so about ten batches\n" +
			"are live at any time. It samples the bytes on disk (SSTables) against the live\n" +
			"bytes (key+value of unexpired rows) as it goes, then after compaction settles.\n\n" +
			"Values are " + "half random, half repetitive, so they compress about 2:1. Without\n" +
			"--dir the benchmark runs in a temporary directory, removed at the end unless\n" +
			"--keep is given; a --dir must be empty or not exist yet, and is kept.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "run in `DIR` (must be empty or not exist) instead of a temporary directory", TakesFile: true},
			&cli.IntFlag{Name: "keys", Value: 100000, Usage: "number of keys per step (at least 10)"},
			&cli.IntFlag{Name: "value-size", Value: 100, Usage: "value size in `BYTES`"},
			&cli.IntFlag{Name: "batch", Value: 100, Usage: "rows per write batch"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the temporary directory"},
		},
		Action: runBench,
	})
}

const benchKeyLen = 16

func benchKey(i int) []byte { return fmt.Appendf(nil, "key%013d", i) }

// benchResult is one line of the summary.
type benchResult struct {
	name  string
	ops   int
	bytes int64 // key+value bytes moved
	dur   time.Duration
	note  string
}

type bench struct {
	w       io.Writer
	tty     bool
	dir     string
	keys    int
	valSize int
	batch   int
	values  []byte // source of value bytes
	results []benchResult
}

func runBench(ctx context.Context, cmd *cli.Command) (err error) {
	if err := noArgs(cmd); err != nil {
		return err
	}
	b := &bench{w: cmd.Root().Writer, keys: cmd.Int("keys"), valSize: cmd.Int("value-size"), batch: cmd.Int("batch")}
	switch {
	case b.keys < 10:
		return usagef("bench: --keys must be at least 10, got %d", b.keys)
	case b.valSize < 0 || b.valSize > mayfly.MaxValueSize:
		return usagef("bench: --value-size must be between 0 and %d", mayfly.MaxValueSize)
	case b.batch < 1:
		return usagef("bench: --batch must be at least 1")
	}
	b.tty = isTerminal(b.w)
	dir, temp := cmd.String("dir"), false
	if isS3(dir) {
		return usagef("%s: --dir must be a local directory (it works on files there)", cmd.Name)
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "mayfly-bench-"); err != nil {
			return err
		}
		temp = true
	} else if err := benchEmptyDir(dir); err != nil {
		return err
	}
	b.dir = dir
	b.values = benchValues(1<<20 + b.valSize)
	fmt.Fprintf(b.w, "Mayfly bench in %s: %d keys of %d bytes, values of %d bytes, batches of %d, no sync\n",
		dir, b.keys, benchKeyLen, b.valSize, b.batch)

	err = b.run(ctx)
	if err == nil {
		b.summary()
	}
	if temp && !cmd.Bool("keep") {
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = fmt.Errorf("bench: remove %s: %w", dir, rerr)
		}
	} else {
		fmt.Fprintf(b.w, "kept %s\n", dir)
	}
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

func benchEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("bench: %s is not empty; give a new or empty directory, or leave out --dir", dir)
	}
	return nil
}

// benchValues returns n bytes that compress about 2:1: runs of 8 random
// bytes alternate with runs of 8 equal bytes.
func benchValues(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, n)
	for i := range buf {
		if i/8%2 == 0 {
			buf[i] = byte(rng.Uint32())
		} else {
			buf[i] = 'a' + byte(i/16%26)
		}
	}
	return buf
}

func (b *bench) value(i int) []byte {
	off := i * 7919 % (len(b.values) - b.valSize)
	return b.values[off : off+b.valSize]
}

// progress shows how far a step got, on a terminal only.
type progress struct {
	b     *bench
	name  string
	total int
	last  time.Time
}

func (b *bench) progress(name string, total int) *progress {
	return &progress{b: b, name: name, total: total, last: time.Now()}
}

func (p *progress) update(done int) {
	if !p.b.tty || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.b.w, "\r  %-10s %3d%% (%d/%d)", p.name, done*100/p.total, done, p.total)
}

func (p *progress) done() {
	if p.b.tty {
		fmt.Fprintf(p.b.w, "\r%60s\r", "")
	}
}

func (b *bench) record(r benchResult) {
	b.results = append(b.results, r)
	fmt.Fprintf(b.w, "  %-10s %9d ops in %8v  %12.0f ops/s  %8.2f MB/s  %s\n",
		r.name, r.ops, r.dur.Round(time.Millisecond), opsPerSec(r), mbPerSec(r), r.note)
}

func opsPerSec(r benchResult) float64 { return float64(r.ops) / max(r.dur.Seconds(), 1e-9) }
func mbPerSec(r benchResult) float64 {
	return float64(r.bytes) / 1e6 / max(r.dur.Seconds(), 1e-9)
}

func (b *bench) run(ctx context.Context) error {
	db, err := mayfly.Open(filepath.Join(b.dir, "kv"), &mayfly.Options{MemtableSize: 4 << 20})
	if err != nil {
		return err
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	if err := b.fill(db, "fillseq", func(i int) int { return i }); err != nil {
		return err
	}
	if err := b.fill(db, "fillrandom", func(int) int { return rng.IntN(b.keys) }); err != nil {
		return err
	}
	// Let flushes and compactions finish so the reads see a settled tree.
	start := time.Now()
	if err := db.Flush(); err != nil {
		return err
	}
	if err := db.WaitForCompactions(ctx); err != nil {
		return err
	}
	m := db.Metrics()
	fmt.Fprintf(b.w, "  (flush and compactions settled in %v: %d tables, %s on disk, write amplification %.2f)\n",
		time.Since(start).Round(time.Millisecond), tableCount(&m), humanBytes(m.DiskBytes()), m.WriteAmplification())
	if err := b.readRandom(db, rng); err != nil {
		return err
	}
	if err := b.scan(db); err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	return b.ttlChurn(ctx)
}

func tableCount(m *mayfly.Metrics) int {
	n := 0
	for _, l := range m.Levels {
		n += l.Files
	}
	return n
}

// fill writes b.keys rows, the i-th at key index key(i).
func (b *bench) fill(db *mayfly.DB, name string, key func(int) int) error {
	p := b.progress(name, b.keys)
	batch := db.NewBatch()
	var bytes int64
	start := time.Now()
	for i := 0; i < b.keys; i++ {
		k := benchKey(key(i))
		v := b.value(i)
		if err := batch.Put(k, v); err != nil {
			return err
		}
		bytes += int64(len(k) + len(v))
		if batch.Len() == b.batch || i == b.keys-1 {
			if err := batch.Write(nil); err != nil {
				return err
			}
			batch.Reset()
			p.update(i + 1)
		}
	}
	dur := time.Since(start)
	p.done()
	b.record(benchResult{name: name, ops: b.keys, bytes: bytes, dur: dur})
	return nil
}

func (b *bench) readRandom(db *mayfly.DB, rng *rand.Rand) error {
	p := b.progress("readrandom", b.keys)
	var bytes int64
	found := 0
	start := time.Now()
	for i := 0; i < b.keys; i++ {
		k := benchKey(rng.IntN(b.keys))
		v, err := db.Get(k)
		switch {
		case err == nil:
			found++
			bytes += int64(len(k) + len(v))
		case err != mayfly.ErrNotFound:
			return err
		}
		if i%1024 == 0 {
			p.update(i)
		}
	}
	dur := time.Since(start)
	p.done()
	b.record(benchResult{name: "readrandom", ops: b.keys, bytes: bytes, dur: dur,
		note: fmt.Sprintf("(%d of %d found)", found, b.keys)})
	return nil
}

func (b *bench) scan(db *mayfly.DB) (err error) {
	p := b.progress("scan", b.keys)
	var bytes int64
	n := 0
	start := time.Now()
	for k, v := range db.Scan(nil, nil, &err) {
		n++
		bytes += int64(len(k) + len(v))
		if n%4096 == 0 {
			p.update(min(n, b.keys))
		}
	}
	if err != nil {
		return err
	}
	dur := time.Since(start)
	p.done()
	b.record(benchResult{name: "scan", ops: n, bytes: bytes, dur: dur, note: fmt.Sprintf("(%d rows)", n)})
	return nil
}

const (
	churnTTL  = 10 * time.Second
	churnTick = time.Second // clock advance per batch
)

// churnBatch is one committed batch of ttlchurn: when it expires, and its
// key+value bytes.
type churnBatch struct {
	deadline time.Time
	bytes    int64
}

// ttlChurn writes write-once keys with a short TTL while a manual clock
// advances, and compares the bytes on disk with the live bytes.
func (b *bench) ttlChurn(ctx context.Context) error {
	clk := clock.NewManual(time.Now().Truncate(time.Millisecond))
	rowBytes := int64(benchKeyLen + b.valSize)
	db, err := mayfly.Open(filepath.Join(b.dir, "ttlchurn"), &mayfly.Options{
		Clock: clk,
		// About 40 flushes over the run, whatever its size.
		MemtableSize: max(64<<10, int64(b.keys)*rowBytes/40),
	})
	if err != nil {
		return err
	}
	defer db.Close()
	var (
		batches []churnBatch
		written int64
		samples [][]string
	)
	live := func() int64 {
		var n int64
		now := clk.Now()
		for _, cb := range batches {
			if !cb.deadline.Before(now) {
				n += cb.bytes
			}
		}
		return n
	}
	t0 := clk.Now()
	sample := func(when string) {
		m := db.Metrics()
		l, d := live(), m.DiskBytes()
		ratio := "-"
		if l > 0 {
			ratio = fmt.Sprintf("%.1fx", float64(d)/float64(l))
		}
		samples = append(samples, []string{when, fmt.Sprintf("T+%v", clk.Now().Sub(t0)), humanBytes(uint64(written)),
			humanBytes(uint64(l)), humanBytes(d), ratio, fmt.Sprint(tableCount(&m))})
	}

	batchSize := max(1, min(b.batch, b.keys/100))
	p := b.progress("ttlchurn", b.keys)
	every := max(1, b.keys/8)
	batch := db.NewBatch()
	ttl := mayfly.ExpireAfter(churnTTL)
	var cur int64
	start := time.Now()
	for i := 0; i < b.keys; i++ {
		k := benchKey(i)
		v := b.value(i)
		if err := batch.PutTTL(k, v, ttl); err != nil {
			return err
		}
		cur += int64(len(k) + len(v))
		if batch.Len() == batchSize || i == b.keys-1 {
			if err := batch.Write(nil); err != nil {
				return err
			}
			batch.Reset()
			batches = append(batches, churnBatch{deadline: clk.Now().Add(churnTTL), bytes: cur})
			written += cur
			cur = 0
			clk.Advance(churnTick)
			p.update(i + 1)
		}
		if (i+1)%every == 0 && i+1 < b.keys {
			sample("writing")
		}
	}
	dur := time.Since(start)
	p.done()
	sample("written")
	if err := db.Flush(); err != nil {
		return err
	}
	if err := db.WaitForCompactions(ctx); err != nil {
		return err
	}
	sample("settled")
	clk.Advance(churnTTL + time.Second)
	if err := db.ReclaimExpired(ctx); err != nil {
		return err
	}
	sample("all expired, reclaimed")
	m := db.Metrics()
	b.record(benchResult{name: "ttlchurn", ops: b.keys, bytes: written, dur: dur,
		note: fmt.Sprintf("(%d compactions, %d expired rows dropped)", m.Compactions, m.ExpiredDropped)})

	fmt.Fprintf(b.w, "\n  ttlchurn: %d-row batches, TTL %v, clock +%v per batch; disk = SSTable bytes, live = unexpired key+value bytes\n",
		batchSize, churnTTL, churnTick)
	tw := tabwriter.NewWriter(b.w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "    when\tengine time\twritten\tlive\tdisk\tdisk/live\ttables\t\n")
	for _, s := range samples {
		for _, c := range s {
			fmt.Fprintf(tw, "%s\t", c)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	return db.Close()
}

func (b *bench) summary() {
	fmt.Fprintf(b.w, "\nsummary:\n")
	tw := tabwriter.NewWriter(b.w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  step\tops\tseconds\tops/s\tMB/s\t\n")
	for _, r := range b.results {
		fmt.Fprintf(tw, "  %s\t%d\t%.3f\t%.0f\t%.2f\t\n", r.name, r.ops, r.dur.Seconds(), opsPerSec(r), mbPerSec(r))
	}
	tw.Flush()
}
