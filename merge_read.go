package mayfly

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/sstable"
)

// mergeChain collects a key's versions newest first, down to a value row,
// a tombstone or the oldest version, for format.MergeChain. Values are
// copied into one arena, so that no memtable or block reference has to be
// held while the chain grows.
type mergeChain struct {
	rows  []format.Row
	spans []span // spans[i]: rows[i]'s value in arena
	arena []byte
	ops   [][]byte
}

type span struct{ start, end int }

func (c *mergeChain) reset() {
	c.rows, c.spans, c.arena = c.rows[:0], c.spans[:0], c.arena[:0]
}

// add appends a copy of r (its key is left out). It reports whether the
// chain is complete: r is a value row or a tombstone. A row with the
// sequence number of the last one added is the key's state at that number
// met twice: a memtable and the table it was flushed to can both be in one
// read state, and the flush may have folded the operand into a value row
// at the operand's sequence number. An operand met again is not added (it
// must count once); a value row or tombstone replaces the row met first,
// as it already holds everything beneath.
func (c *mergeChain) add(r *format.Row) bool {
	base := r.Flags&(format.FlagMerge|format.FlagDeadline) == 0
	if n := len(c.rows); n > 0 && c.rows[n-1].Seq == r.Seq {
		if !base {
			return false
		}
		c.rows, c.spans = c.rows[:n-1], c.spans[:n-1]
	}
	c.spans = append(c.spans, span{len(c.arena), len(c.arena) + len(r.Value)})
	c.arena = append(c.arena, r.Value...)
	row := *r
	row.Key, row.Value = nil, nil
	c.rows = append(c.rows, row)
	return base
}

// reverse turns a chain collected oldest first into newest first.
func (c *mergeChain) reverse() {
	slices.Reverse(c.rows)
	slices.Reverse(c.spans)
}

// resolve points the rows' values into the arena and folds the chain
// (newest first) with m (DB.merger; nil: no operator is set). key names
// the key for the operator.
func (c *mergeChain) resolve(key []byte, m format.Merger) (format.Row, bool, error) {
	if m == nil {
		return format.Row{}, false, fmt.Errorf("%w: key %q has merge operands", ErrNoMergeOperator, key)
	}
	for i := range c.rows {
		c.rows[i].Key = key
		sp := c.spans[i]
		c.rows[i].Value = c.arena[sp.start:sp.end:sp.end]
	}
	if cap(c.ops) < len(c.rows) {
		c.ops = make([][]byte, 0, 2*len(c.rows)) // MergeChain's operand list fits
	}
	r, ok, err := format.MergeChain(c.rows, m, c.ops)
	r.Key = nil
	return r, ok, err
}

// findMerged resolves key at seq when its versions hold merge operands:
// it looks up the versions newest first down to a value row, a tombstone
// or the bottom and folds them by the rules of RFC 0010 (format.MergeChain).
// found is false when the key has no value in commit order; the caller
// judges the deadline of the row returned at its own time (rule 4). The
// row's value is the caller's, or the cache's (never to be modified).
// newest is the sequence number of the newest version visible at seq.
func (db *DB) findMerged(rs *readState, key []byte, seq, newest uint64) (format.Row, sstable.BlockRef, bool, error) {
	db.metrics.mergeReads.Add(1)
	cached := db.mergeCache.get(key)
	if cached != nil && newest == cached.seq {
		// Nothing newer than the remembered state: it is the answer.
		db.metrics.mergeCacheHits.Add(1)
		if cached.memLog != rs.mem.LogNum() || !cached.pos.IsZero() {
			// Not looked for in this memtable yet, or its position went
			// stale (another key's row linked next to it): look.
			db.mergeCache.position(rs.mem, key, cached)
		}
		return cached.row(), sstable.BlockRef{}, cached.live, nil
	}
	c := chainPool.Get().(*mergeChain)
	defer c.release()
	if err := db.collectResolved(c, rs, key, seq, cached); err != nil {
		return format.Row{}, sstable.BlockRef{}, false, err
	}
	r, ok, err := c.resolve(key, db.merger())
	if err != nil {
		return format.Row{}, sstable.BlockRef{}, false, err
	}
	if len(c.rows) >= mergeCacheMin && db.mergeCache != nil {
		// The cache's copy of the value is the answer: the chain's arena
		// goes back to the pool.
		r.Value = db.mergeCache.put(key, c.rows[0].Seq, &r, ok)
	} else if ok {
		r.Value = bytes.Clone(r.Value)
	}
	return r, sstable.BlockRef{}, ok, nil
}

// chainPool recycles the chains point reads collect.
var chainPool = sync.Pool{New: func() any { return new(mergeChain) }}

// maxPooledChain bounds the arena of a chain kept for reuse.
const maxPooledChain = 64 << 10

// release empties c and returns it to chainPool, unless it grew large.
func (c *mergeChain) release() {
	if cap(c.arena) > maxPooledChain {
		return
	}
	c.reset()
	clear(c.ops[:cap(c.ops)])
	chainPool.Put(c)
}

// collectResolved adds to c the versions of key visible at seq in rs, newest
// first, as collect with DB.find would, down to a value row, a tombstone,
// the oldest version or the version cached (when not nil) remembers a
// state at, which it adds in place of that version and everything beneath
// (merge_cache.go). A memtable's versions are walked in one search each
// (Memtable.Versions): find returns the newest version at most seq of the
// first source holding one, so each source yields its versions below the
// last one added before the next source is asked.
func (db *DB) collectResolved(c *mergeChain, rs *readState, key []byte, seq uint64, cached *mergeState) error {
	done := false
	visit := func(r format.Row) bool {
		if cached != nil && r.Seq == cached.seq {
			base := cached.row()
			c.add(&base)
			done = true
		} else {
			done = c.add(&r) || r.Seq == 0
		}
		seq = r.Seq - 1
		return !done
	}
	rs.mem.Versions(key, seq, visit)
	for _, m := range rs.imm {
		if done {
			return nil
		}
		m.Versions(key, seq, visit)
	}
	if done {
		return nil
	}
	return c.collect(key, seq, func(seq uint64) (format.Row, sstable.BlockRef, bool, error) {
		r, ref, found, err := db.findInTables(rs, key, seq, 0)
		if found && cached != nil && r.Seq == cached.seq {
			ref.Release()
			return cached.row(), sstable.BlockRef{}, true, nil
		}
		return r, ref, found, err
	})
}

// collect adds the versions of key that find returns, newest first from
// seq, down to a value row, a tombstone or the oldest version.
func (c *mergeChain) collect(key []byte, seq uint64, find func(seq uint64) (format.Row, sstable.BlockRef, bool, error)) error {
	for {
		r, ref, found, err := find(seq)
		if err != nil || !found {
			ref.Release()
			return err
		}
		done := c.add(&r)
		ref.Release()
		if done || r.Seq == 0 {
			return nil
		}
		seq = r.Seq - 1
	}
}

// beneathFunc is compaction.Config.Below.
type beneathFunc = func(key []byte) (format.Row, bool, error)

// stateBeneath returns a compaction.Config.Below that resolves a key in
// the tables of rs from level `from` down, in commit order; nil without a
// merge operator. A flush of the oldest memtable reads every table (all
// older than it).
func (db *DB) stateBeneath(rs *readState, from int) beneathFunc {
	if db.opts.MergeOperator == nil {
		return nil
	}
	return func(key []byte) (format.Row, bool, error) {
		c := chainPool.Get().(*mergeChain)
		defer c.release()
		if err := c.collect(key, format.MaxSeq, func(seq uint64) (format.Row, sstable.BlockRef, bool, error) {
			return db.findInTables(rs, key, seq, from)
		}); err != nil || len(c.rows) == 0 {
			return format.Row{}, false, err
		}
		return c.resolveOwned(key, db.merger())
	}
}

// resolveOwned is resolve with the value copied out of the chain's arena,
// so that it outlives the chain's release.
func (c *mergeChain) resolveOwned(key []byte, m format.Merger) (format.Row, bool, error) {
	r, ok, err := c.resolve(key, m)
	if ok {
		r.Value = bytes.Clone(r.Value)
	}
	return r, ok, err
}

// compactionBeneath is stateBeneath for compaction p: the levels below its
// output, which hold only data older than its inputs. A compaction with a
// level-0 input gets none (an older level-0 table outside it may overlap).
func (db *DB) compactionBeneath(rs *readState, p *compaction.Pick) beneathFunc {
	if !beneathRead(p) {
		return nil
	}
	return db.stateBeneath(rs, p.OutputLevel+1)
}

// beneathRead reports whether compaction p reads the state beneath its
// output (compactionBeneath): it is not at the bottom and has no level-0
// input.
func beneathRead(p *compaction.Pick) bool {
	if p.Bottom {
		return false
	}
	for _, in := range p.Inputs {
		if in.Level == 0 {
			return false
		}
	}
	return true
}

// mergeForward resolves the versions of it.key from the merge's position
// (an operand; d, when not nil, is a newer deadline row above it) down to
// a value row or tombstone, where it leaves the merge, or past the key's
// last version (it.ahead: at the next key or the end). ok is the merge's
// validity; an operator error is left in it.err with found and ok false.
func (it *Iterator) mergeForward(d *format.Row) (resolved format.Row, found, ok bool) {
	c := &it.chain
	c.reset()
	if d != nil {
		c.add(d)
	}
	for ok = true; ok; ok = it.m.Next() {
		v := it.m.Row()
		if !bytes.Equal(v.Key, it.key) {
			it.ahead = true
			break
		}
		if c.add(v) {
			break
		}
	}
	it.ahead = it.ahead || !ok
	if err := it.m.Error(); err != nil {
		it.err = err
		return format.Row{}, false, false
	}
	r, found, err := c.resolve(it.key, it.db.merger())
	if err != nil {
		it.err = err
		return format.Row{}, false, false
	}
	return r, found, ok
}

// seedChain starts findPrev's chain from the state its versions of it.key
// read so far give (live: valueBuf under expires and deadline), as the base
// an operand folds onto, at seq, the last version's sequence number.
func (it *Iterator) seedChain(live bool, seq uint64) {
	it.chain.reset()
	if !live {
		return
	}
	base := format.Row{Seq: seq, Value: it.valueBuf}
	if it.expires {
		base.Flags, base.ExpireTS = format.FlagHasExpire, it.deadline
	}
	it.chain.add(&base)
}

// settleMerge resolves findPrev's chain (collected oldest first) into the
// key's state: *live, valueBuf, expires and deadline. It reports false,
// with it.err set, when the operator fails.
func (it *Iterator) settleMerge(live *bool) bool {
	it.hasMerge = false
	it.chain.reverse()
	r, ok, err := it.chain.resolve(it.key, it.db.merger())
	it.chain.reset()
	if err != nil {
		it.err = err
		return false
	}
	*live = ok
	if ok {
		it.valueBuf = append(it.valueBuf[:0], r.Value...)
		it.expires, it.deadline = r.HasExpiry(), r.ExpireTS
	}
	return true
}
