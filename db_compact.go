package mayfly

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/merge"
	"github.com/mayflydb/mayfly/manifest"
)

// bottomLevel is where compactions write. Until the leveled compactor lands,
// the tree has two tiers: level 0 (flushed tables, overlapping) and the
// bottom level (sorted, non-overlapping).
const bottomLevel = manifest.NumLevels - 1

func (db *DB) maybeScheduleCompaction() {
	if db.opts.DisableAutoCompaction {
		return
	}
	db.mu.Lock()
	need := db.current != nil && len(db.current.levels[0]) >= db.opts.L0CompactionThreshold
	db.mu.Unlock()
	if need {
		db.kickCompaction()
	}
}

func (db *DB) compactionLoop() {
	defer db.bgDone.Done()
	for {
		select {
		case <-db.closing:
			return
		case <-db.compKick:
		}
		for {
			db.mu.Lock()
			run := db.bgErr == nil && !db.closed && len(db.current.levels[0]) >= db.opts.L0CompactionThreshold
			db.mu.Unlock()
			if !run {
				break
			}
			if err := db.compactRange(context.Background(), nil, nil, true); err != nil {
				db.setBackgroundError(fmt.Errorf("compaction: %w", err))
				break
			}
		}
	}
}

// Compact flushes the memtable and rewrites every table holding keys in
// [lo, hi] (nil bounds are open) into the bottom level, applying the
// compaction rules: shadowed versions go, expired rows and tombstones with
// nothing beneath them are dropped. It returns when the result is durable,
// or early with ctx's error (leaving the database as it was).
func (db *DB) Compact(ctx context.Context, lo, hi []byte) error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if lo != nil && hi != nil && bytes.Compare(lo, hi) > 0 {
		return fmt.Errorf("%w: Compact range [%q, %q] is inverted", ErrInvalidOptions, lo, hi)
	}
	if err := db.Flush(); err != nil {
		return err
	}
	return db.compactRange(ctx, lo, hi, false)
}

// compactRange compacts the tables overlapping [lo, hi], widened until it
// covers every level-0 table overlapping it, into the bottom level. With
// l0Only the range is that of all level-0 tables.
func (db *DB) compactRange(ctx context.Context, lo, hi []byte, l0Only bool) error {
	db.compactMu.Lock()
	defer db.compactMu.Unlock()

	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	v := db.current
	v.ref()
	db.mu.Unlock()
	defer v.unref()

	inputs := pickInputs(v, lo, hi, l0Only)
	if len(inputs) == 0 {
		return nil
	}
	start := time.Now()
	iters := make([]format.Iterator, 0, len(inputs))
	var inBytes uint64
	for _, t := range inputs {
		iters = append(iters, t.reader.NewIter())
		inBytes += t.meta.Size
	}
	m := merge.New(iters...)
	defer m.Close()
	ci := compaction.NewIterator(&ctxIterator{Iterator: m, ctx: ctx}, db.compactionConfig(true))
	outs, err := db.writeTables(ci, db.opts.TargetFileSize)
	if err != nil {
		return err
	}
	edit := &versionEdit{deleted: make(map[uint64]bool)}
	for _, t := range inputs {
		edit.deleted[t.meta.Num] = true
	}
	var outBytes uint64
	for _, t := range outs {
		edit.added = append(edit.added, addedTable{level: bottomLevel, table: t})
		outBytes += t.meta.Size
	}
	if err := db.logAndApply(edit); err != nil {
		db.discardTables(outs)
		return err
	}
	db.metrics.compactions.Add(1)
	db.metrics.compactionBytesRead.Add(inBytes)
	db.metrics.compactionBytesWritten.Add(outBytes)
	s := ci.Stats()
	db.log.Info("mayfly: compacted", "inputs", len(inputs), "outputs", len(outs),
		"bytesIn", inBytes, "bytesOut", outBytes, "expiredDropped", s.ExpiredDropped,
		"tombstonesDropped", s.TombstonesDropped, "duration", time.Since(start))
	return nil
}

// pickInputs returns the tables a compaction of [lo, hi] must read: every
// table overlapping the range, with the range widened to each level-0
// table's bounds until it stops growing, so that no older version of a
// compacted key is left outside the output.
func pickInputs(v *version, lo, hi []byte, l0Only bool) []*tableFile {
	if l0Only {
		if len(v.levels[0]) == 0 {
			return nil
		}
		lo, hi = v.levels[0][0].smallestKey, v.levels[0][0].largestKey
		for _, t := range v.levels[0] {
			if bytes.Compare(t.smallestKey, lo) < 0 {
				lo = t.smallestKey
			}
			if bytes.Compare(t.largestKey, hi) > 0 {
				hi = t.largestKey
			}
		}
	}
	for {
		var inputs []*tableFile
		nlo, nhi := lo, hi
		for _, lvl := range v.levels {
			for _, t := range lvl {
				if !t.overlaps(lo, hi) {
					continue
				}
				inputs = append(inputs, t)
				if nlo != nil && bytes.Compare(t.smallestKey, nlo) < 0 {
					nlo = t.smallestKey
				}
				if nhi != nil && bytes.Compare(t.largestKey, nhi) > 0 {
					nhi = t.largestKey
				}
			}
		}
		if bytes.Equal(nlo, lo) && bytes.Equal(nhi, hi) {
			return inputs
		}
		lo, hi = nlo, nhi
	}
}

// ctxIterator stops a compaction's input when its context is done.
type ctxIterator struct {
	*merge.Iterator
	ctx   context.Context
	steps int
	err   error
}

func (c *ctxIterator) Next() bool {
	c.steps++
	if c.steps%1024 == 0 {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			return false
		}
	}
	return c.Iterator.Next()
}

func (c *ctxIterator) First() bool {
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return false
	}
	return c.Iterator.First()
}

func (c *ctxIterator) Error() error {
	if c.err != nil {
		return c.err
	}
	return c.Iterator.Error()
}
