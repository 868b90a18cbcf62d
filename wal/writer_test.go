package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/storage"
)

type failLog struct {
	writes, syncs int
	failWrite     bool
	failSync      bool
}

func (f *failLog) Write(p []byte) (int, error) {
	if f.failWrite {
		return len(p) / 2, errors.New("disk full")
	}
	f.writes++
	return len(p), nil
}

func (f *failLog) Sync() error {
	if f.failSync {
		return errors.New("EIO")
	}
	f.syncs++
	return nil
}

func (f *failLog) Close() error { return nil }

func TestWriterStickyErrors(t *testing.T) {
	fl := &failLog{}
	w, err := NewWriter(fl, 1)
	if err != nil {
		t.Fatal(err)
	}
	fl.failWrite = true
	// Write only queues; the failure surfaces when the flusher writes.
	if err := w.Write(AppendRecord(nil, []byte("xx"))); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err == nil {
		t.Fatal("flush of a failed write succeeded")
	}
	fl.failWrite = false
	if err := w.Write(AppendRecord(nil, []byte("yy"))); err == nil {
		t.Fatal("write after a failed write succeeded")
	}
	if err := w.Sync(); err == nil {
		t.Fatal("sync after a failed write succeeded")
	}

	fl = &failLog{}
	w, _ = NewWriter(fl, 1)
	fl.failSync = true
	if err := w.Sync(); err == nil {
		t.Fatal("sync succeeded")
	}
	fl.failSync = false
	if err := w.Write(AppendRecord(nil, nil)); err == nil {
		t.Fatal("write after a failed sync succeeded")
	}

	fl = &failLog{}
	w, _ = NewWriter(fl, 1)
	w.Close()
	if err := w.Write(AppendRecord(nil, nil)); err == nil {
		t.Fatal("write after close succeeded")
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{128, 1024, 16 << 10} {
		b.Run(fmt.Sprint(size), func(b *testing.B) { benchAppend(b, size, false) })
	}
}

func BenchmarkAppendSync(b *testing.B) {
	for _, size := range []int{128, 16 << 10} {
		b.Run(fmt.Sprint(size), func(b *testing.B) { benchAppend(b, size, true) })
	}
}

// benchAppend writes records of size payload bytes to a preallocated
// segment, as the engine does, each followed by a Sync if sync.
func benchAppend(b *testing.B, size int, sync bool) {
	s, err := storage.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	lw, err := CreateLog(s, "wal/000001.wal")
	if err != nil {
		b.Fatal(err)
	}
	w, err := NewWriter(lw, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	payload := bytes.Repeat([]byte{0xab}, size)
	var buf []byte
	b.SetBytes(int64(RecordLen(size)))
	b.ResetTimer()
	for range b.N {
		buf = AppendRecord(buf[:0], payload)
		if err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
		if sync {
			if err := w.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestWritesAroundMaxPending round-trips a mix of small records and records
// larger than maxPending, written without syncs in between, so that appends
// fill chunks, spill past the own ones while the flusher writes, and pass
// oversized records in Go heap chunks of their own; every record must come
// back in order.
func TestWritesAroundMaxPending(t *testing.T) {
	s := storage.NewMem()
	rng := rand.New(rand.NewPCG(3, 4))
	var payloads [][]byte
	for i := range 40 {
		size := rng.IntN(maxPending / 4)
		if i%7 == 2 {
			size = maxPending + rng.IntN(maxPending)
		}
		p := make([]byte, size)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		payloads = append(payloads, p)
	}
	w := newTestWriter(t, s, "wal/000009.wal")
	for _, p := range payloads {
		if err := w.Write(AppendRecord(nil, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, res, err := replayAll(t, s, "wal/000009.wal")
	if err != nil {
		t.Fatal(err)
	}
	if !samePayloads(got, payloads) || res.Torn() {
		t.Fatalf("replayed %d of %d records (torn %v)", len(got), len(payloads), res.Torn())
	}
}

// TestWriterBuffersTakenOnFirstWrite: a Writer that is never written to
// maps no pending buffer; written to, it maps at most two, outside the Go
// heap, and Close unmaps them.
func TestWriterBuffersTakenOnFirstWrite(t *testing.T) {
	b0, n0 := manual.Allocated()
	lw, err := storage.NewMem().CreateLog("000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(lw, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	if b, n := manual.Allocated(); b != b0 || n != n0 {
		t.Fatalf("a Writer not yet written to maps %d bytes in %d buffers", b-b0, n-n0)
	}
	rec := AppendRecord(nil, []byte("row"))
	for range 100 {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, want := w.Size(), int64(HeaderSize+100*len(rec)); got != want {
		t.Fatalf("size %d after 100 records, want %d", got, want)
	}
	if b, n := manual.Allocated(); n-n0 < 1 || n-n0 > 2 || b-b0 != (n-n0)*maxPending {
		t.Fatalf("a written Writer maps %d bytes in %d buffers, want 1 or 2 of %d", b-b0, n-n0, maxPending)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkManualFreed(t, b0, n0)
	if err := w.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
	if err := w.Write(rec); err == nil {
		t.Fatal("Write after Close succeeded")
	}
	checkManualFreed(t, b0, n0)
}

// checkManualFreed fails t unless manual memory is back to b0 bytes in n0
// buffers.
func checkManualFreed(t *testing.T, b0, n0 int64) {
	t.Helper()
	if b, n := manual.Allocated(); b != b0 || n != n0 {
		t.Fatalf("manual memory %d bytes in %d buffers, want %d in %d", b, n, b0, n0)
	}
}

// TestOversizedWriteBufferNotKept: a write larger than maxPending gets a Go
// heap buffer for that one write; once it has been handed to the log the
// Writer must not keep that buffer, and its own two buffers stay the only
// ones mapped.
func TestOversizedWriteBufferNotKept(t *testing.T) {
	b0, n0 := manual.Allocated()
	w := newTestWriter(t, storage.NewMem(), "wal/000010.wal")
	big := AppendRecord(nil, make([]byte, 3*maxPending))
	small := AppendRecord(nil, []byte("row"))
	for _, rec := range [][]byte{big, small, big, small, small, big} {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	pc := cap(w.pending)
	idle := len(w.idle)
	w.mu.Unlock()
	if pc > maxPending || idle > 2 {
		t.Fatalf("after oversized writes the pending buffer has capacity %d and %d buffers are idle, want at most %d and 2", pc, idle, maxPending)
	}
	if b, n := manual.Allocated(); n-n0 > 2 || b-b0 != (n-n0)*maxPending {
		t.Fatalf("oversized writes left %d manual bytes in %d buffers", b-b0, n-n0)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkManualFreed(t, b0, n0)
}

// TestWriterFreesBuffersOnErrorAndPendingClose: the pending buffers are
// unmapped exactly once by Close after a failed write, after a failed sync,
// and when Close is called while the flusher is still writing one buffer
// and the other holds records.
func TestWriterFreesBuffersOnErrorAndPendingClose(t *testing.T) {
	rec := AppendRecord(nil, make([]byte, 1000))
	t.Run("write error", func(t *testing.T) {
		b0, n0 := manual.Allocated()
		fl := &failLog{}
		w, err := NewWriter(fl, testSeg)
		if err != nil {
			t.Fatal(err)
		}
		fl.failWrite = true
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err == nil {
			t.Fatal("Flush after a failed write succeeded")
		}
		if err := w.Write(rec); err == nil {
			t.Fatal("Write after a failed write succeeded")
		}
		if err := w.Close(); err == nil {
			t.Fatal("Close after a failed write succeeded")
		}
		checkManualFreed(t, b0, n0)
	})
	t.Run("sync error", func(t *testing.T) {
		b0, n0 := manual.Allocated()
		fl := &failLog{failSync: true}
		w, err := NewWriter(fl, testSeg)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteSync(rec); err == nil {
			t.Fatal("WriteSync with a failing sync succeeded")
		}
		w.Close()
		checkManualFreed(t, b0, n0)
	})
	t.Run("close while writing", func(t *testing.T) {
		b0, n0 := manual.Allocated()
		g := &gateLog{entered: make(chan struct{}, 8), gate: make(chan struct{})}
		w, err := NewWriter(g, testSeg)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		<-g.entered // the flusher holds the first buffer
		for range 10 {
			if err := w.Write(rec); err != nil { // into the second buffer
				t.Fatal(err)
			}
		}
		closed := make(chan error)
		go func() { closed <- w.Close() }()
		// Close cannot free while the flusher writes: the buffers stay.
		if b, n := manual.Allocated(); n-n0 != 2 || b-b0 != 2*maxPending {
			t.Fatalf("during Close: %d manual bytes in %d buffers, want 2 of %d", b-b0, n-n0, maxPending)
		}
		close(g.gate)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if g.writes != 3 {
			t.Fatalf("%d log writes, want 3 (header, first record, the other ten)", g.writes)
		}
		checkManualFreed(t, b0, n0)
	})
}

// gateLog is a LogWriter whose writes after the first (the segment header)
// wait until the test closes gate, so that records pile up in the Writer's
// pending buffer meanwhile.
type gateLog struct {
	failLog
	entered chan struct{}     // receives once per gated Write, before it waits
	gate    chan struct{}     // closed to let writes through
	inner   storage.LogWriter // if set, the writes go on to it
}

func (g *gateLog) Write(p []byte) (int, error) {
	if g.writes > 0 {
		g.entered <- struct{}{}
		<-g.gate
	}
	if g.inner != nil {
		g.writes++
		return g.inner.Write(p)
	}
	return g.failLog.Write(p)
}

func (g *gateLog) Close() error {
	if g.inner != nil {
		return g.inner.Close()
	}
	return nil
}

// TestPendingBufferGrowsToMaxPending: while the flusher is stuck in a write,
// appends fill the other buffer up to maxPending, its fixed capacity: append
// must never outgrow it (which would move the pending bytes to the Go heap).
func TestPendingBufferGrowsToMaxPending(t *testing.T) {
	g := &gateLog{entered: make(chan struct{}, 8), gate: make(chan struct{})}
	w, err := NewWriter(g, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	rec := AppendRecord(nil, make([]byte, 1000))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	<-g.entered // the flusher holds the first buffer until the gate opens
	n := maxPending / len(rec)
	for range n {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	pl, pc := len(w.pending), cap(w.pending)
	w.mu.Unlock()
	if pl != n*len(rec) || pc != maxPending {
		t.Fatalf("pending buffer holds %d bytes in %d, want %d in exactly %d", pl, pc, n*len(rec), maxPending)
	}
	close(g.gate)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if g.writes != 3 {
		t.Fatalf("%d log writes, want 3 (header, first record, the piled-up records)", g.writes)
	}
}

// TestSpillWhileLogIsSlow: while the flusher is stuck in a write, appends
// do not wait for it: they fill the other own chunk and go on into spill
// chunks, up to MaxBacklog bytes. The append that would pass MaxBacklog
// waits until the log takes a chunk. Once the log is fast again every
// record reaches it in order, one chunk per write, and the spill chunks
// are unmapped as they are written.
func TestSpillWhileLogIsSlow(t *testing.T) {
	b0, n0 := manual.Allocated()
	s := storage.NewMem()
	lw, err := s.CreateLog("000011.wal")
	if err != nil {
		t.Fatal(err)
	}
	g := &gateLog{entered: make(chan struct{}, 64), gate: make(chan struct{})}
	g.inner = lw
	w, err := NewWriter(g, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	var payloads [][]byte
	record := func(i int) []byte {
		p := make([]byte, 1000)
		binary.LittleEndian.PutUint64(p, uint64(i))
		payloads = append(payloads, p)
		return AppendRecord(nil, p)
	}
	if err := w.Write(record(0)); err != nil {
		t.Fatal(err)
	}
	<-g.entered // the flusher holds the first own chunk until the gate opens
	recLen := len(AppendRecord(nil, make([]byte, 1000)))
	perChunk := maxPending / recLen
	fit := MaxBacklog / recLen
	for i := 1; i <= fit; i++ { // a wait here would hang the test
		if err := w.Write(record(i)); err != nil {
			t.Fatal(err)
		}
	}
	chunks := (fit + perChunk - 1) / perChunk
	if b, n := manual.Allocated(); n-n0 <= 2 || n-n0 != int64(1+chunks) || b-b0 != int64(1+chunks)*maxPending {
		t.Fatalf("with the log stuck: %d manual bytes in %d chunks, want %d chunks of %d (the one being written and %d filled, spill chunks among them)",
			b-b0, n-n0, 1+chunks, maxPending, chunks)
	}
	var waits atomic.Uint64
	w.CountWaits(&waits)
	size := w.Size()
	over := make(chan error, 1)
	go func() { over <- w.Write(record(fit + 1)) }()
	waitUntil(t, "the append past MaxBacklog to wait", func() bool { return waits.Load() == 1 })
	if got := w.Size(); got != size {
		t.Fatalf("an append past MaxBacklog went in without waiting: size %d -> %d", size, got)
	}
	close(g.gate)
	if err := <-over; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkManualFreed(t, b0, n0)
	// The header, the first record alone, then one write per chunk.
	if want := 2 + chunks + 1; g.writes < want-1 || g.writes > want {
		t.Fatalf("%d log writes, want %d or %d (header, first record, a chunk each)", g.writes, want-1, want)
	}
	got, res, err := replayAll(t, s, "000011.wal")
	if err != nil {
		t.Fatal(err)
	}
	if !samePayloads(got, payloads) || res.Torn() {
		t.Fatalf("replayed %d of %d records (torn %v)", len(got), len(payloads), res.Torn())
	}
}

// marksOf returns the offset and value of every sync mark in seg.
func marksOf(seg []byte) [][2]int64 {
	var out [][2]int64
	for _, r := range splitRecords(seg) {
		if r.typ == RecordTypeSyncMark {
			out = append(out, [2]int64{r.off, int64(binary.LittleEndian.Uint64(r.payload))})
		}
	}
	return out
}

// TestSyncMarks checks where the Writer puts sync marks: in front of the
// first record appended after a Sync that made records durable, carrying
// that Sync's end; never without a Sync, never for a Sync of the header
// alone, never at Close, once for several Syncs in a row.
func TestSyncMarks(t *testing.T) {
	s := storage.NewMem()
	w := newTestWriter(t, s, "wal/m")
	rec := func(p string) []byte { return AppendRecord(nil, []byte(p)) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Sync()) // the header alone: no mark
	must(w.Write(rec("a")))
	must(w.Write(rec("b")))
	afterB := w.Size()
	must(w.Sync())
	must(w.Sync()) // nothing new: the same offset
	must(w.Write(rec("c")))
	must(w.Write(rec("d"))) // no Sync since the mark: no mark
	must(w.WriteSync(rec("e")))
	afterE := w.Size()
	must(w.WriteSync(rec("f")))
	afterF := w.Size()
	must(w.Close())
	seg, err := storage.ReadAll(s, "wal/m")
	must(err)
	recs := splitRecords(seg)
	var layout []string
	for _, r := range recs {
		if r.typ == RecordTypeSyncMark {
			layout = append(layout, fmt.Sprintf("mark(%d)", binary.LittleEndian.Uint64(r.payload)))
		} else {
			layout = append(layout, string(r.payload))
		}
	}
	want := []string{"a", "b", fmt.Sprintf("mark(%d)", afterB), "c", "d", "e",
		fmt.Sprintf("mark(%d)", afterE), "f"}
	if !slices.Equal(layout, want) {
		t.Fatalf("segment holds %v, want %v", layout, want)
	}
	if int64(len(seg)) != afterF || recs[len(recs)-1].end() != int64(len(seg)) {
		t.Fatalf("segment of %d bytes, want %d", len(seg), afterF)
	}
	got, res, err := replayAll(t, s, "wal/m")
	if err != nil || res.Torn() || res.Records != 6 || res.ValidBytes != int64(len(seg)) {
		t.Fatalf("replay: %v %+v", err, res)
	}
	if !samePayloads(got, [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e"), []byte("f")}) {
		t.Fatalf("replayed %q", got)
	}

	// ReplayRecords reports each record's offset past the marks.
	var offs, wantOffs []int64
	if _, err := ReplayRecords(s, "wal/m", testSeg, func(off int64, _ []byte) error { offs = append(offs, off); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.typ == RecordTypeFull {
			wantOffs = append(wantOffs, r.off)
		}
	}
	if !slices.Equal(offs, wantOffs) {
		t.Fatalf("ReplayRecords offsets %v, want %v", offs, wantOffs)
	}

	// Without any Sync there is no mark.
	s2 := storage.NewMem()
	writeSegmentSyncEvery(t, s2, "wal/n", [][]byte{[]byte("x"), []byte("y")}, 0)
	seg2, _ := storage.ReadAll(s2, "wal/n")
	if m := marksOf(seg2); len(m) != 0 {
		t.Fatalf("marks %v in a segment written without Sync", m)
	}
}

// TestSeal: a sealed segment takes no more appends, replays as Sealed, and
// only zeros may follow its seal.
func TestSeal(t *testing.T) {
	s := storage.NewMem()
	w := newTestWriter(t, s, "wal/s")
	if err := w.Write(AppendRecord(nil, []byte("a"))); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSync(AppendRecord(nil, []byte("b"))); err != nil {
		t.Fatal(err)
	}
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(AppendRecord(nil, []byte("c"))); !errors.Is(err, ErrSealed) {
		t.Fatalf("append after Seal: %v, want ErrSealed", err)
	}
	if err := w.Seal(); err != nil {
		t.Fatalf("second Seal: %v", err)
	}
	if err := w.Sync(); err != nil {
		t.Fatalf("Sync after Seal: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seg, err := storage.ReadAll(s, "wal/s")
	if err != nil {
		t.Fatal(err)
	}
	recs := splitRecords(seg)
	if last := recs[len(recs)-1]; last.typ != RecordTypeSeal || len(last.payload) != 0 || last.end() != int64(len(seg)) {
		t.Fatalf("segment does not end in an empty seal: %+v", last)
	}
	replay := func(b []byte) (ReplayResult, []string, error) {
		m := storage.NewMem()
		lw, err := m.CreateLog("wal/x")
		if err != nil {
			t.Fatal(err)
		}
		lw.Write(b)
		lw.Close()
		var got []string
		res, err := Replay(m, "wal/x", testSeg, func(p []byte) error { got = append(got, string(p)); return nil })
		return res, got, err
	}
	res, got, err := replay(seg)
	if err != nil || res.Torn() || !res.Sealed || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("sealed segment: %+v, %v, %v", res, got, err)
	}
	// A preallocated segment's zero tail after the seal is its end.
	res, _, err = replay(append(bytes.Clone(seg), make([]byte, 100)...))
	if err != nil || !res.Sealed {
		t.Fatalf("sealed segment with a zero tail: %+v, %v", res, err)
	}
	// Nothing is written after a seal: data there is damage.
	res, _, err = replay(append(bytes.Clone(seg), AppendRecord(nil, []byte("late"))...))
	if !errors.Is(err, format.ErrCorruption) || res.Sealed {
		t.Fatalf("record after the seal: %+v, %v, want ErrCorruption", res, err)
	}
	// A seal carries no payload.
	bad := appendTyped(bytes.Clone(seg[:recs[len(recs)-1].off]), RecordTypeSeal, []byte{1})
	if _, _, err := replay(bad); !errors.Is(err, format.ErrCorruption) {
		t.Fatalf("seal with a payload: %v, want ErrCorruption", err)
	}
	// Without its seal the segment replays as unsealed (the engine refuses
	// that for a segment that is not the newest).
	res, got, err = replay(seg[:recs[len(recs)-1].off])
	if err != nil || res.Torn() || res.Sealed || len(got) != 2 {
		t.Fatalf("segment cut before its seal: %+v, %v, %v", res, got, err)
	}
}

// callerLog counts the log writes made by the flusher goroutine and by
// anyone else.
type callerLog struct {
	failLog
	mu                  sync.Mutex
	byFlusher, byOthers int
}

func (c *callerLog) Write(p []byte) (int, error) {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	flusher := false
	for {
		f, more := frames.Next()
		flusher = flusher || strings.HasSuffix(f.Function, ".flushLoop")
		if !more {
			break
		}
	}
	c.mu.Lock()
	if flusher {
		c.byFlusher++
	} else {
		c.byOthers++
	}
	c.mu.Unlock()
	return c.failLog.Write(p)
}

// A synced commit is written by the committing goroutine itself: WriteSync
// with an idle flusher makes one log write and one sync from the caller and
// never hands the bytes to the flusher (which would cost two goroutine
// wake-ups per commit). The header goes out in NewWriter, also from the
// caller. (The sync mark in front of each commit after the first is part
// of the commit's own write.)
func TestWriteSyncWritesInline(t *testing.T) {
	cl := &callerLog{}
	w, err := NewWriter(cl, 1)
	if err != nil {
		t.Fatal(err)
	}
	const commits = 20
	for i := range commits {
		if err := w.WriteSync(AppendRecord(nil, []byte(fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
	}
	checkWrittenInline(t, w, cl, commits)
}

// checkWrittenInline closes w and checks that each of its commits, synced
// one by one, was one log write and one sync from the caller, and that the
// flusher wrote nothing (the header is the caller's too, in NewWriter).
func checkWrittenInline(t *testing.T, w *Writer, cl *callerLog, commits int) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if cl.byFlusher != 0 || cl.byOthers != 1+commits || cl.syncs != commits {
		t.Errorf("%d synced commits: %d writes by the flusher, %d by the caller (header included), %d syncs; want 0, %d, %d",
			commits, cl.byFlusher, cl.byOthers, cl.syncs, 1+commits, commits)
	}
}

// Writers mixing Write and WriteSync concurrently: records reach the log in
// each writer's order, and whatever a WriteSync covered survives a crash
// taken right after it returns.
func TestWriteSyncConcurrent(t *testing.T) {
	m := storage.NewMem()
	w := newTestWriter(t, m, "wal/000001.wal")
	const writers, perWriter = 4, 300
	rec := func(g, i int) []byte {
		return AppendRecord(nil, binary.LittleEndian.AppendUint32([]byte{byte(g)}, uint32(i)))
	}
	// check replays s and verifies each writer's records are in order; it
	// returns how many of each writer's records it found.
	check := func(s storage.Storage) ([writers]int, error) {
		var next [writers]int
		_, err := Replay(s, "wal/000001.wal", testSeg, func(p []byte) error {
			g, i := int(p[0]), int(binary.LittleEndian.Uint32(p[1:]))
			if i != next[g] {
				return fmt.Errorf("writer %d: record %d after %d", g, i, next[g]-1)
			}
			next[g]++
			return nil
		})
		return next, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				if i%3 != 2 {
					if err := w.Write(rec(g, i)); err != nil {
						errs <- err
						return
					}
					continue
				}
				if err := w.WriteSync(rec(g, i)); err != nil {
					errs <- err
					return
				}
				if i%30 == 29 {
					got, err := check(m.CrashClone())
					if err == nil && got[g] < i+1 {
						err = fmt.Errorf("writer %d: %d records survive a crash after syncing record %d", g, got[g], i)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := check(m)
	if err != nil {
		t.Fatal(err)
	}
	for g, n := range got {
		if n != perWriter {
			t.Errorf("writer %d: %d of %d records in the log", g, n, perWriter)
		}
	}
}

// WriteSync's failures are sticky like Write's and Sync's.
func TestWriteSyncStickyErrors(t *testing.T) {
	fl := &failLog{failWrite: true}
	w, err := NewWriter(&failLog{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	w.lw = fl
	if err := w.WriteSync(AppendRecord(nil, []byte("a"))); err == nil {
		t.Fatal("WriteSync of a failed write succeeded")
	}
	fl.failWrite = false
	if err := w.WriteSync(AppendRecord(nil, []byte("b"))); err == nil {
		t.Fatal("WriteSync after a failed write succeeded")
	}
	if fl.syncs != 0 {
		t.Errorf("%d syncs after a failed write", fl.syncs)
	}

	fl = &failLog{failSync: true}
	w, _ = NewWriter(fl, 1)
	if err := w.WriteSync(AppendRecord(nil, []byte("c"))); err == nil {
		t.Fatal("WriteSync with a failed sync succeeded")
	}
	fl.failSync = false
	if err := w.WriteSync(AppendRecord(nil, []byte("d"))); err == nil {
		t.Fatal("WriteSync after a failed sync succeeded")
	}
	if err := w.Write(AppendRecord(nil, []byte("e"))); err == nil {
		t.Fatal("Write after a failed sync succeeded")
	}

	w, _ = NewWriter(&failLog{}, 1)
	w.Close()
	if err := w.WriteSync(AppendRecord(nil, nil)); err == nil {
		t.Fatal("WriteSync after close succeeded")
	}
}

// writePreallocated writes payloads through CreateLog on a local directory
// (so the log is preallocated) and returns the storage, the segment file's
// bytes as read back, and the offset at which each record starts (plus the
// end of the last one).
func writePreallocated(t *testing.T, payloads [][]byte) (*storage.Local, []byte, []int64) {
	t.Helper()
	s, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lw, err := CreateLog(s, "wal/000007.wal")
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(lw, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	// bounds[i] is where record i starts (after the sync mark, if any,
	// that precedes it); the last entry is the end of the records.
	var bounds []int64
	for i, p := range payloads {
		if err := w.Write(AppendRecord(nil, p)); err != nil {
			t.Fatal(err)
		}
		bounds = append(bounds, w.Size()-int64(RecordLen(len(p))))
		if i%4 == 0 {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	bounds = append(bounds, w.Size())
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	// Read the segment as a crash would leave it: still open, with its
	// reserved tail (Close trims the tail).
	data, err := storage.ReadAll(s, "wal/000007.wal")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	closed, err := storage.ReadAll(s, "wal/000007.wal")
	if err != nil {
		t.Fatal(err)
	}
	if end := bounds[len(bounds)-1]; int64(len(closed)) != end {
		t.Fatalf("closed segment is %d bytes, want its %d bytes of records (the reserved tail trimmed)", len(closed), end)
	}
	return s, data, bounds
}

func TestPreallocatedSegmentReplaysCleanly(t *testing.T) {
	payloads := testPayloads(rand.New(rand.NewPCG(11, 12)), 40)
	s, data, bounds := writePreallocated(t, payloads)
	end := bounds[len(bounds)-1]
	if int64(len(data))%storage.LogPreallocSize != 0 || int64(len(data)) <= end {
		t.Fatalf("file is %d bytes for %d bytes of records: not preallocated", len(data), end)
	}
	if !allZero(data[end:]) {
		t.Fatal("preallocated tail is not zero")
	}
	got, res, err := replayAll(t, s, "wal/000007.wal")
	if err != nil || res.Torn() || res.ValidBytes != end || !samePayloads(got, payloads) {
		t.Fatalf("replay: %v %+v (%d of %d records)", err, res, len(got), len(payloads))
	}
}

// TestPreallocatedSegmentCuts simulates a crash that kept the records of a
// preallocated segment up to some point and left the rest of the reserved
// space zero (or, at worst, a later page written while an earlier one was
// not): at a record boundary replay ends cleanly, inside a record it stops
// at a torn record, and data after zeros is reported, never silently read.
func TestPreallocatedSegmentCuts(t *testing.T) {
	payloads := testPayloads(rand.New(rand.NewPCG(13, 14)), 30)
	_, data, bounds := writePreallocated(t, payloads)
	const name = "wal/000007.wal"
	replayCut := func(t *testing.T, img []byte) ([][]byte, ReplayResult) {
		t.Helper()
		m := storage.NewMem()
		putLog(t, m, name, img)
		got, res, err := replayAll(t, m, name)
		if err != nil {
			t.Fatalf("replay error %v", err)
		}
		return got, res
	}
	for k, b := range bounds {
		// Records 0..k-1 written, the rest of the reserved space zero.
		img := bytes.Clone(data)
		clear(img[b:])
		got, res := replayCut(t, img)
		if res.Torn() || res.ValidBytes != b || !samePayloads(got, payloads[:k]) {
			t.Fatalf("cut at boundary %d (offset %d): %+v, %d records", k, b, res, len(got))
		}
		if k == len(payloads) {
			continue
		}
		// Record k partly written: its first byte (part of the CRC) or all
		// but its last byte reached the disk.
		for _, keep := range []int64{1, int64(RecordLen(len(payloads[k]))) - 1} {
			img := bytes.Clone(data)
			clear(img[b+keep:])
			if allZero(img[b : b+keep]) {
				continue // the kept bytes happen to be zero: a clean end
			}
			got, res := replayCut(t, img)
			if res.TornOffset != b || !samePayloads(got, payloads[:k]) {
				t.Fatalf("record %d cut after %d bytes: %+v, %d records", k, keep, res, len(got))
			}
			if err := res.TornError(name); !errors.Is(err, format.ErrCorruption) ||
				!strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), fmt.Sprint(b)) {
				t.Fatalf("TornError = %v; want corruption naming %s and offset %d", err, name, b)
			}
		}
		// Zeros after record k-1, then garbage further on (record k's page
		// lost, a later page written): replay stops at the zeros and
		// reports the garbage.
		img = bytes.Clone(data)
		clear(img[b:])
		junk := b + RecordHeaderSize + int64(k%7)*4096
		img[junk] = 0x5a
		got, res = replayCut(t, img)
		if res.TornOffset != b || !samePayloads(got, payloads[:k]) ||
			!strings.Contains(res.TornReason, fmt.Sprint(junk)) {
			t.Fatalf("garbage at %d after zeros at %d: %+v, %d records", junk, b, res, len(got))
		}
	}
}

// countLog counts the log writes and their bytes, safely for the test to
// read while the flusher writes.
type countLog struct {
	mu            sync.Mutex
	writes, bytes int
}

func (c *countLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	c.bytes += len(p)
	return len(p), nil
}

func (c *countLog) Sync() error  { return nil }
func (c *countLog) Close() error { return nil }

func (c *countLog) counts() (writes, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes, c.bytes
}

// waitUntil yields until cond holds, failing the test if it does not within
// 10 s (a flusher that never gets there).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		runtime.Gosched()
	}
}

func (w *Writer) isHolding() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.holding && w.backlog > 0
}

// TestMinWriteInterval: with a minimum write interval (an hour, so that it
// never ends by itself here), the flusher writes an append that follows a
// quiet interval at once; it holds the appends that follow within the
// interval, and writes them together as soon as gatherBytes are pending,
// when Flush asks, or when Close drains; WriteSync writes whatever is held
// itself. No byte is lost or written twice.
func TestMinWriteInterval(t *testing.T) {
	cl := &countLog{}
	w, err := NewWriter(cl, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	w.SetMinWriteInterval(time.Hour)
	rec := AppendRecord(nil, make([]byte, 100))
	appended := HeaderSize
	write := func() {
		t.Helper()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		appended += len(rec)
	}
	wantWrites := func(step string, n int) {
		t.Helper()
		if got, _ := cl.counts(); got != n {
			t.Fatalf("%s: %d log writes, want %d", step, got, n)
		}
	}

	write() // the first since the header: no flusher write yet, so at once
	waitUntil(t, "the first append's write", func() bool { n, _ := cl.counts(); return n == 2 })
	for range 10 {
		write()
	}
	waitUntil(t, "the flusher to hold", w.isHolding)
	wantWrites("appends within the interval", 2)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	wantWrites("Flush", 3)

	write()
	waitUntil(t, "the flusher to hold", w.isHolding)
	for range gatherBytes / len(rec) {
		write()
	}
	waitUntil(t, "the gathered write", func() bool { n, _ := cl.counts(); return n == 4 })

	write()
	waitUntil(t, "the flusher to hold", w.isHolding)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	wantWrites("Sync", 5)

	write() // preceded by a sync mark
	waitUntil(t, "the flusher to hold", w.isHolding)
	size := w.Size()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wantWrites("Close", 6)
	if _, n := cl.counts(); n != appended+SyncMarkSize || int64(n) != size {
		t.Fatalf("%d bytes reached the log; %d were appended, %d records and a sync mark", n, size, appended)
	}
}

// TestMinWriteIntervalEndsHold: held bytes reach the log on their own once
// the interval since the last write has passed, without any further call.
func TestMinWriteIntervalEndsHold(t *testing.T) {
	cl := &countLog{}
	w, err := NewWriter(cl, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMinWriteInterval(time.Millisecond)
	rec := AppendRecord(nil, make([]byte, 100))
	for range 3 {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	want := HeaderSize + 3*len(rec)
	waitUntil(t, "the held bytes", func() bool { _, n := cl.counts(); return n == want })
}

// syncGateLog records what is written to it; its Sync waits until gate is
// closed and then fails if fail is set.
type syncGateLog struct {
	mu      sync.Mutex
	data    []byte
	syncs   int
	entered chan struct{} // receives once per Sync, before it waits
	gate    chan struct{}
	fail    bool
}

func newSyncGateLog() *syncGateLog {
	return &syncGateLog{entered: make(chan struct{}, 4), gate: make(chan struct{})}
}

func (g *syncGateLog) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.data = append(g.data, p...)
	return len(p), nil
}

func (g *syncGateLog) Sync() error {
	g.entered <- struct{}{}
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fail {
		return errors.New("EIO")
	}
	g.syncs++
	return nil
}

func (g *syncGateLog) Close() error { return nil }

func (g *syncGateLog) state() ([]byte, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]byte(nil), g.data...), g.syncs
}

// TestSealAsync: SealAsync hands the seal to the log before it returns and
// syncs in the background; a newer segment's WriteSync waits for that sync
// (After) and fails, syncing nothing, if it failed.
func TestSealAsync(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			ga, gb := newSyncGateLog(), newSyncGateLog()
			close(gb.gate)
			ga.fail = fail
			a, err := NewWriter(ga, 1)
			if err != nil {
				t.Fatal(err)
			}
			rec := AppendRecord(nil, []byte("row"))
			if err := a.Write(rec); err != nil {
				t.Fatal(err)
			}
			seal, err := a.SealAsync()
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Write(rec); !errors.Is(err, ErrSealed) {
				t.Fatalf("Write after SealAsync = %v, want ErrSealed", err)
			}
			<-ga.entered // the background sync of a has begun
			data, _ := ga.state()
			want := appendTyped(append(AppendHeader(nil, 1), rec...), RecordTypeSeal, nil)
			if !bytes.Equal(data, want) {
				t.Fatalf("log holds %x when its seal's sync begins, want header, record and seal %x", data, want)
			}

			b, err := NewWriter(gb, 2)
			if err != nil {
				t.Fatal(err)
			}
			b.After(seal)
			done := make(chan error, 1)
			go func() { done <- b.WriteSync(rec) }()
			select {
			case err := <-done:
				t.Fatalf("WriteSync of the newer segment returned (%v) before the older seal's sync", err)
			case <-gb.entered:
				t.Fatal("the newer segment was synced before the older seal's sync ended")
			default:
			}
			close(ga.gate)
			err = <-done
			_, bSyncs := gb.state()
			if !fail {
				if err != nil || seal.Wait() != nil || bSyncs != 1 {
					t.Fatalf("WriteSync = %v, seal = %v, newer segment synced %d times; want nil, nil, 1", err, seal.Wait(), bSyncs)
				}
			} else {
				if err == nil || seal.Wait() == nil || bSyncs != 0 {
					t.Fatalf("WriteSync = %v, seal = %v, newer segment synced %d times; want both failed, 0", err, seal.Wait(), bSyncs)
				}
				if err := b.Write(rec); err == nil {
					t.Fatal("Write after a failed older seal succeeded")
				}
			}
			a.Close()
			b.Close()
		})
	}
}

// TestSealAsyncOrdersWrites: SealAsync returns while the segment's log is
// stuck in a write, and the newer segment hands nothing but its header to
// its log until the older seal has been written.
func TestSealAsyncOrdersWrites(t *testing.T) {
	g := &gateLog{entered: make(chan struct{}, 8), gate: make(chan struct{})}
	a, err := NewWriter(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec := AppendRecord(nil, []byte("row"))
	if err := a.Write(rec); err != nil {
		t.Fatal(err)
	}
	<-g.entered // a's flusher is stuck writing the record
	seal, err := a.SealAsync()
	if err != nil {
		t.Fatal(err)
	}
	fl := &failLog{}
	b, err := NewWriter(fl, 2)
	if err != nil {
		t.Fatal(err)
	}
	b.After(seal)
	if err := b.Write(rec); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- b.Flush() }()
	select {
	case err := <-flushed:
		t.Fatalf("the newer segment's records reached its log (%v) before the older seal was written", err)
	default:
	}
	close(g.gate)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := seal.Wait(); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()
	if g.writes != 3 || fl.writes != 2 {
		t.Fatalf("older log took %d writes, newer %d; want 3 (header, record, seal) and 2 (header, record)", g.writes, fl.writes)
	}
}

// TestDocsWALChunkSizes: the memory and the crash window docs/usage.md
// states for the WAL's chunks are the code's: two own chunks, up to
// MaxBacklog of unwritten appends while a write to the log is slow, and
// then at most the chunk being written plus the chunks that backlog spans
// (its last one partly filled), for two segments: at a rotation the old
// segment drains while the new one fills behind its seal, and the next
// rotation needs a memtable's worth of appends to the new one, more than
// it can hold unwritten (RFC 0003, "WAL writer and background flusher").
func TestDocsWALChunkSizes(t *testing.T) {
	data, err := os.ReadFile("../docs/usage.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	mib := func(n int) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', -1, 64) + " MiB" }
	for _, want := range []string{
		"WAL chunks                                    " + mib(2*maxPending) + " (up to " + mib(2*(MaxBacklog/maxPending+2)*maxPending) + " at defaults while writes to the log are slow)",
		"up to " + mib(MaxBacklog) + " of later writes per segment wait in memory for it",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/usage.md does not say %q", want)
		}
	}
}
