package mayfly

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
)

// Flush writes the active memtable (and any frozen ones) to level-0
// SSTables and returns when they are durable and recorded in the manifest,
// and the WAL segments they came from are deleted (after the flushes'
// FlushEnd and WALDeleted events).
func (db *DB) Flush() error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	db.commitMu.Lock()
	// Every write acknowledged before Flush, and every batch logged since,
	// is in the active memtable once the publish queue is empty.
	if err := db.pub.wait(); err != nil {
		db.commitMu.Unlock()
		return err
	}
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		db.commitMu.Unlock()
		return ErrClosed
	}
	empty := db.mem.Empty()
	db.mu.Unlock()
	if !empty {
		if err := db.rotateMemtable(); err != nil {
			db.commitMu.Unlock()
			return err
		}
	}
	db.commitMu.Unlock()

	db.mu.Lock()
	defer db.mu.Unlock()
	for len(db.imm) > 0 && db.bgErr == nil && !db.closed {
		db.kickFlush()
		db.cond.Wait()
	}
	// Also wait for the flushed segments' deletion, so that a caller sees
	// the WAL as the flush left it.
	for db.walGC.pending > 0 && db.bgErr == nil && !db.closed {
		db.cond.Wait()
	}
	if db.bgErr != nil {
		return db.bgErr
	}
	if db.closed {
		return ErrClosed
	}
	return nil
}

func (db *DB) flushLoop() {
	defer db.bgDone.Done()
	db.walGC.kick = make(chan struct{}, 1)
	defer close(db.walGC.kick) // after the last flush: deleteFlushedLoop drains and stops
	db.bgDone.Add(1)
	go db.deleteFlushedLoop()
	for {
		select {
		case <-db.closing:
			return
		case <-db.flushKick:
		}
		for {
			db.mu.Lock()
			if len(db.imm) == 0 || db.bgErr != nil || db.closed {
				db.mu.Unlock()
				break
			}
			m := db.imm[0]
			frozen := slices.Clone(db.imm)
			db.mu.Unlock()
			freezeAll(frozen)
			if err := db.flushMemtable(m); err != nil {
				db.setBackgroundError(fmt.Errorf("flush: %w", err))
				break
			}
		}
	}
}

// freezeAll makes each immutable memtable read-only (memtable.Freeze), if
// not done yet, so that a stray write to it panics rather than go
// unflushed. It runs on the flush goroutine, off the commit path; the
// memtables stay readable throughout, and are held by db.imm, which only
// this goroutine shrinks.
func freezeAll(imm []*memtable.Memtable) {
	for _, m := range imm {
		m.Freeze()
	}
}

// flushMemtable writes the oldest frozen memtable m to level 0. m is
// readable throughout: it stays in db.imm, holding the DB's reference,
// until its table is recorded.
func (db *DB) flushMemtable(m *memtable.Memtable) error {
	start := time.Now()
	ev := db.opts.EventListener
	ev.flushBegin(FlushInfo{Rows: uint64(m.Len())})
	rs, err := db.loadReadState()
	if err != nil {
		ev.flushEnd(FlushInfo{Duration: time.Since(start), Err: err})
		return err
	}
	// The memo of the previous flush serves this one only; this flush's
	// serves the next once its table is recorded (flush_memo.go).
	prev := db.flushMemo
	next := db.newFlushMemo(prev)
	db.flushMemo = nil
	t, err := db.writeL0(m, true, flushDeadlineSources(rs, m).fn(), db.stateBeneath(rs, 0), prev, next)
	rs.release()
	if err != nil {
		ev.flushEnd(FlushInfo{Duration: time.Since(start), Err: err})
		return err
	}
	edit := &versionEdit{}
	if t != nil {
		edit.added = []addedTable{{level: 0, table: t}}
	}
	db.mu.Lock()
	if len(db.imm) > 1 {
		edit.minLogNum = db.imm[1].LogNum()
	} else {
		edit.minLogNum = db.mem.LogNum()
	}
	db.mu.Unlock()
	if err := db.logAndApply(edit); err != nil {
		if t != nil {
			db.discardTables([]*tableFile{t}, err)
		}
		ev.flushEnd(FlushInfo{Duration: time.Since(start), Err: err})
		return err
	}
	db.flushMemo = next
	db.metrics.flushes.Add(1)
	if t != nil {
		db.metrics.flushBytes.Add(t.Meta.Size)
	}
	db.mu.Lock()
	db.imm = db.imm[1:]
	db.publishReadState()
	db.walGC.pending++ // its WAL segment, queued below
	db.cond.Broadcast()
	db.mu.Unlock()
	// The DB's reference: the arena is freed now unless a reader still
	// holds a read state listing m (then its last release frees it).
	m.Unref()
	info := FlushInfo{Duration: time.Since(start)}
	if t != nil {
		info.Table, info.Bytes, info.Rows = tableName(t.Meta.Num), t.Meta.Size, t.Meta.NumRows
	}
	ev.flushEnd(info)
	if t != nil {
		db.log.Info("mayfly: flushed memtable", "table", t.Meta.Num, "bytes", t.Meta.Size,
			"rows", t.Meta.NumRows, "duration", time.Since(start))
	}
	// After FlushEnd: Flush returns once the segment is deleted, so its
	// caller has seen every event of the flush.
	db.queueFlushedSegment(m.LogNum())
	db.maybeScheduleCompaction()
	return nil
}

// writeL0 writes memtable m, the oldest frozen one, as one level-0 table.
// It returns nil if the memtable yields no rows. mayBeBottom says whether
// every older row is in the current version's tables; recovery, which
// flushes several memtables before recording any of their tables, passes
// false. deadlineAbove is compaction.Config.DeadlineAbove for the newer
// memtables (nil: none holds a deadline row), below its Below (the tables
// beneath m, for merge operands; nil: not read).
//
// Rows that expired while in the memtable are kept as they are, not turned
// into tombstones: they hide older versions just as well, and a table of TTL
// rows alone stays eligible for a whole-file drop. When no table in any
// level overlaps the memtable's key range, no older version of any of its
// keys exists (older memtables are already flushed, and compactions only
// rewrite existing ranges), so the flush is a bottom write and expired rows
// and tombstones with nothing beneath them are dropped.
func (db *DB) writeL0(m *memtable.Memtable, mayBeBottom bool, deadlineAbove func([]byte) bool, below beneathFunc, prev, next *flushMemo) (*tableFile, error) {
	it := m.NewIter()
	defer it.Close()
	cfg := db.compactionConfig(false)
	cfg.KeepExpired = true
	cfg.DeadlineAbove = deadlineAbove
	// Each state found beneath is a row of an older table that the row
	// written for the key supersedes (compaction.Table.Shadows).
	var shadows uint64
	below = db.memoBeneath(below, prev, next)
	if below != nil {
		cfg.Below = func(key []byte) (format.Row, bool, error) {
			r, ok, err := below(key)
			if ok {
				shadows++
			}
			return r, ok, err
		}
	}
	bits := db.bloomBits(0)
	if mayBeBottom && it.First() {
		lo := append([]byte(nil), it.Row().Key...)
		it.Last()
		hi := it.Row().Key
		db.mu.Lock()
		cfg.Bottom = !compaction.AnyOverlap(db.pickerLevels(), lo, hi)
		db.mu.Unlock()
		if cfg.Bottom {
			// Nothing to merge with: the table goes down by a move
			// (sequential keys) and keeps its filter there.
			bits = db.bloomBits(compaction.Bottom)
		}
	}
	ci := compaction.NewIterator(it, cfg)
	var written func(*format.Row)
	if next != nil && below != nil {
		written = next.written
	}
	tables, err := db.writeTables(ci, bits, 0, nil, written)
	if err != nil || len(tables) == 0 {
		return nil, err
	}
	tables[0].shadows = shadows
	tables[0].newKeys = carriedNewKeys(uint64(m.NewKeys()), uint64(m.Len()), tables[0].Meta.NumRows)
	return tables[0], nil
}

// carriedNewKeys is how many of out rows, written from in rows of which
// newKeys were their key's first version (Memtable.NoteNewKeys), are known
// to still be first versions: every row dropped on the way may have been
// one of them. A row that supersedes a dropped first version has nothing
// beneath it either, but is not counted; the count only errs low.
func carriedNewKeys(newKeys, in, out uint64) uint64 {
	dropped := in - min(in, out)
	if newKeys <= dropped {
		return 0
	}
	return min(newKeys-dropped, out)
}

// carryNewKeys sets the newKeys of outs, the level-0 tables a merge or
// split within level 0 wrote from the level-0 tables of inputs: the
// inputs' count less the rows dropped (carriedNewKeys), shared among the
// outputs in proportion to their rows, rounded down.
func carryNewKeys(inputs []compaction.Input, outs []*tableFile) {
	var newKeys, in, out uint64
	for _, input := range inputs {
		for _, t := range input.Tables {
			newKeys += t.NewKeys
			in += t.Meta.NumRows
		}
	}
	for _, t := range outs {
		out += t.Meta.NumRows
	}
	carried := carriedNewKeys(newKeys, in, out)
	if carried == 0 {
		return
	}
	for _, t := range outs {
		t.newKeys = uint64(float64(carried) * float64(t.Meta.NumRows) / float64(out))
	}
}

// compactionConfig returns the rules for a flush or compaction starting now:
// the open snapshots, and an expiry time no later than any snapshot's.
func (db *DB) compactionConfig(bottom bool) compaction.Config {
	db.mu.Lock()
	defer db.mu.Unlock()
	return compaction.Config{Snapshots: db.snapshotSeqs(), Now: db.pickerEnv().Now, Bottom: bottom, Merger: db.merger()}
}

// bloomBits is the bloom filter bits per key of a table written to level:
// Options.L0BloomBitsPerKey at level 0, Options.BloomBitsPerKey below.
func (db *DB) bloomBits(level int) int {
	if level == 0 {
		return db.opts.L0BloomBitsPerKey
	}
	return db.opts.BloomBitsPerKey
}

// writeTables writes the rows of ci to new tables whose bloom filters have
// bits bits per key. With splitAt > 0 a table
// is closed once it reaches splitAt bytes, but never between two versions of
// one user key. A table is also closed before the first row whose user key
// reaches the next of cuts (ascending user keys; nil: none), so that no table
// spans a cut. written (nil: none) sees each row once it is added. The
// tables are durable when writeTables returns.
func (db *DB) writeTables(ci *compaction.Iterator, bits int, splitAt int64, cuts [][]byte, written func(*format.Row)) ([]*tableFile, error) {
	var (
		out     []*tableFile
		w       *sstable.Writer
		obj     storage.ObjectWriter
		num     uint64
		lastKey []byte
	)
	fail := func(err error) ([]*tableFile, error) {
		if w != nil {
			w.Abort() // frees its off-heap filter memory; no-op after Finish
		}
		if obj != nil {
			obj.Abort()
		}
		db.discardTables(out, nil)
		return nil, err
	}
	finish := func() error {
		props, err := w.Finish()
		if err != nil {
			return err
		}
		if err := obj.Commit(); err != nil {
			return err
		}
		obj = nil
		meta := metaFromProps(num, props, db.clock.NowMillis())
		t, err := db.openTable(meta)
		if err != nil {
			return err
		}
		out = append(out, t)
		w = nil
		return nil
	}
	for ci.Next() {
		r := ci.Row()
		cut := false
		for len(cuts) > 0 && bytes.Compare(r.Key, cuts[0]) >= 0 {
			cuts, cut = cuts[1:], true
		}
		if w != nil && (cut || splitAt > 0 && int64(w.EstimatedSize()) >= splitAt && !bytes.Equal(r.Key, lastKey)) {
			if err := finish(); err != nil {
				return fail(err)
			}
		}
		if w == nil {
			num = db.allocFileNum()
			o, err := db.store.Create(tableName(num))
			if err != nil {
				return fail(err)
			}
			obj = o
			w = sstable.NewWriter(o, sstable.WriterOptions{
				BlockSize:       db.opts.BlockSize,
				RestartInterval: 16,
				Compression:     db.opts.Compression,
				BloomBitsPerKey: bits,
				CreationTime:    db.clock.NowMillis(),
			})
		}
		if err := w.Add(r); err != nil {
			return fail(err)
		}
		if written != nil {
			written(r)
		}
		lastKey = append(lastKey[:0], r.Key...)
	}
	if err := ci.Error(); err != nil {
		return fail(err)
	}
	if w != nil {
		if err := finish(); err != nil {
			return fail(err)
		}
	}
	s := ci.Stats()
	db.metrics.expiredToTombstone.Add(s.ExpiredToTombstone)
	db.metrics.expiredDropped.Add(s.ExpiredDropped)
	db.metrics.tombstonesDropped.Add(s.TombstonesDropped)
	db.metrics.mergesFolded.Add(s.MergesFolded)
	db.metrics.operandsCombined.Add(s.OperandsCombined)
	return out, nil
}

// metaFromProps returns the manifest entry of table num, whose properties
// are p, produced at now. The key bounds are copied, so the entry shares
// no memory with p.
func metaFromProps(num uint64, p *sstable.Properties, now int64) *manifest.FileMeta {
	m := &manifest.FileMeta{Num: num, TableStats: p.TableStats, CompactedTime: now}
	m.Smallest = append([]byte(nil), p.Smallest...)
	m.Largest = append([]byte(nil), p.Largest...)
	return m
}
