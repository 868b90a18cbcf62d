package sstable

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/heapmeter"
)

func benchRows(n int) []format.Row {
	rows := make([]format.Row, n)
	for i := range rows {
		v := make([]byte, 100)
		for j := range v {
			v[j] = byte('a' + (i+j/10)%26)
		}
		rows[i] = format.Row{Key: fmt.Appendf(nil, "user/%010d", i), Seq: uint64(i + 1), Value: v}
		if i%4 == 0 {
			rows[i].Flags = format.FlagHasTS | format.FlagHasExpire
			rows[i].TS, rows[i].ExpireTS = 1_700_000_000_000, 1_700_000_360_000
		}
	}
	return rows
}

func rowBytes(rows []format.Row) int64 {
	var n int64
	for i := range rows {
		n += int64(len(rows[i].Key) + len(rows[i].Value))
	}
	return n
}

func BenchmarkWriter(b *testing.B) {
	rows := benchRows(10000)
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		b.Run(c.String(), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(rowBytes(rows))
			for b.Loop() {
				w := NewWriter(io.Discard, WriterOptions{Compression: c, BloomBitsPerKey: 10})
				for i := range rows {
					if err := w.Add(&rows[i]); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := w.Finish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReaderGet measures Reader.Get of present keys: with a cache
// holding the whole table (none, zstd), and with one holding about a tenth
// of it (snappy-miss: most lookups miss, so a Get also reads, checks,
// decompresses and caches a block).
func BenchmarkReaderGet(b *testing.B) {
	rows := benchRows(10000)
	for _, bc := range []struct {
		name  string
		c     Compression
		cache int64
	}{{"none", NoCompression, 64 << 20}, {"zstd", ZstdCompression, 64 << 20}, {"snappy-miss", SnappyCompression, 128 << 10}} {
		b.Run(bc.name, func(b *testing.B) {
			data, _ := buildTable(b, rows, WriterOptions{Compression: bc.c, BloomBitsPerKey: 10})
			r := openTable(b, data, NewCache(bc.cache))
			for i := range rows { // warm the cache
				r.Get(rows[i].Key, format.MaxSeq)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(rows[0].Key) + len(rows[0].Value)))
			cpu := startThreadCPU()
			defer cpu.stop()
			i := 0
			for b.Loop() {
				row := &rows[i%len(rows)]
				if _, found, err := r.Get(row.Key, format.MaxSeq); !found || err != nil {
					b.Fatal(found, err)
				}
				i += 7919
			}
			cpu.report(b)
		})
	}
}

// threadCPUMeter measures the CPU time of the benchmark's own OS thread.
type threadCPUMeter struct{ start int64 }

// startThreadCPU locks the calling goroutine to its thread (stop unlocks it)
// and starts measuring.
func startThreadCPU() threadCPUMeter {
	runtime.LockOSThread()
	return threadCPUMeter{start: threadCPU()}
}

func (c threadCPUMeter) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(threadCPU()-c.start)/float64(b.N), "thread-cpu-ns/op")
	}
}

func (threadCPUMeter) stop() { runtime.UnlockOSThread() }

func BenchmarkIterNext(b *testing.B) {
	rows := benchRows(10000)
	data, _ := buildTable(b, rows, WriterOptions{Compression: SnappyCompression})
	r := openTable(b, data, NewCache(64<<20))
	it := r.NewIter()
	it.First()
	b.ReportAllocs()
	b.SetBytes(rowBytes(rows) / int64(len(rows)))
	for b.Loop() {
		if !it.Next() && !it.First() {
			b.Fatal(it.Error())
		}
	}
}

func BenchmarkIterPrev(b *testing.B) {
	rows := benchRows(10000)
	data, _ := buildTable(b, rows, WriterOptions{Compression: SnappyCompression})
	r := openTable(b, data, NewCache(64<<20))
	it := r.NewIter()
	it.Last()
	b.ReportAllocs()
	b.SetBytes(rowBytes(rows) / int64(len(rows)))
	for b.Loop() {
		if !it.Prev() && !it.Last() {
			b.Fatal(it.Error())
		}
	}
}

func BenchmarkBloomProbe(b *testing.B) {
	rows := benchRows(10000)
	data, _ := buildTable(b, rows, WriterOptions{BloomBitsPerKey: 10})
	r := openTable(b, data, nil)
	probe := []byte("user/absent0000")
	b.ReportAllocs()
	b.SetBytes(int64(len(probe)))
	i := 0
	for b.Loop() {
		probe[len(probe)-1] = byte(i)
		if _, err := r.MayContain(probe); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkBloomProbeLarge probes the filter of a table of 1M keys (a ~1.2
// MB filter, like one of the benchmark fixture's tables) at random keys, half
// present, so that probes miss the CPU caches as a cold point read's do.
func BenchmarkBloomProbeLarge(b *testing.B) {
	const n = 1 << 20
	rows := make([]format.Row, n)
	for i := range rows {
		rows[i] = format.Row{Key: fmt.Appendf(nil, "user/%010d", 2*i), Seq: 1}
	}
	data, _ := buildTable(b, rows, WriterOptions{BloomBitsPerKey: 10})
	r := openTable(b, data, nil)
	probes := make([][]byte, 1<<16)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range probes {
		probes[i] = fmt.Appendf(nil, "user/%010d", rng.IntN(2*n))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := r.MayContain(probes[i%len(probes)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkFilterWriter adds the distinct keys of one flushed memtable
// (300k 16-byte keys shaped like the engine benchmark's) to a fresh filter
// builder and builds the filter (time excludes the two GCs). heap-B/key is the builder's live heap per
// key just before build (what a flush holds until the table is finished).
func BenchmarkFilterWriter(b *testing.B) {
	const n = 300_000
	keys := make([]byte, 16*n)
	for i := range n {
		_ = fmt.Appendf(keys[16*i:16*i], "%015dk", i) // fills keys in place
	}
	b.ReportAllocs()
	var live float64
	for b.Loop() {
		before := heapmeter.Live(b)
		f := newFilterWriter(10)
		for i := range n {
			f.add(keys[16*i : 16*i+16])
		}
		live = float64(heapmeter.Live(b)-before) / n
		_, err := f.build()
		f.release()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(live, "heap-B/key")
}

// BenchmarkPointIndexSeek measures the point index's search alone, over 16
// indexes of 32768 blocks each (4 MiB of heads, 8 MiB of handles: more
// than the CPU's L2, as in a database whose indexes compete with block
// data for it), with random keys, and reads the found block's handle as
// Get does.
func BenchmarkPointIndexSeek(b *testing.B) {
	const tables, blocks = 16, 32768
	pxs := make([]*pointIndex, tables)
	for t := range pxs {
		rows := make([]format.Row, blocks)
		for i := range rows {
			rows[i] = format.Row{Key: fmt.Appendf(nil, "user%012d", i*tables+t), Seq: 1, Value: []byte("v")}
		}
		data, _ := buildTable(b, rows, WriterOptions{BlockSize: 1})
		r := openTable(b, data, nil)
		defer r.Close()
		pxs[t] = mustIndex(b, r)
		if pxs[t].len() != blocks {
			b.Fatalf("%d blocks", pxs[t].len())
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = format.SeekKey(nil, fmt.Appendf(nil, "user%012d", rng.IntN(tables*blocks)), format.MaxSeq)
	}
	b.ReportAllocs()
	var sum uint64
	i := 0
	for b.Loop() {
		px := pxs[i%tables]
		if j := px.seek(keys[i%len(keys)]); j < px.len() {
			sum += px.handles[j].offset
		}
		i++
	}
	if sum == 0 {
		b.Fatal("no block found")
	}
}
