package mayfly

import (
	"fmt"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/sstable"
)

// mergeChain collects a key's versions newest first, down to a value row,
// a tombstone or the oldest version, for format.MergeChain. Values are
// copied into one arena, so that no memtable or block reference has to be
// held while the chain grows.
type mergeChain struct {
	rows  []format.Row
	ends  []int // ends[i]: the end of rows[i]'s value in arena
	arena []byte
	ops   [][]byte
}

// add appends a copy of r (its key is left out). It reports whether the
// chain is complete: r is a value row or a tombstone.
func (c *mergeChain) add(r *format.Row) bool {
	c.arena = append(c.arena, r.Value...)
	c.ends = append(c.ends, len(c.arena))
	row := *r
	row.Key, row.Value = nil, nil
	c.rows = append(c.rows, row)
	return r.Flags&(format.FlagMerge|format.FlagDeadline) == 0
}

// resolve points the rows' values into the arena and folds the chain with
// op. key names the key for the operator.
func (c *mergeChain) resolve(key []byte, op MergeOperator) (format.Row, bool, error) {
	if op == nil {
		return format.Row{}, false, fmt.Errorf("%w: key %q has merge operands", ErrNoMergeOperator, key)
	}
	start := 0
	for i := range c.rows {
		c.rows[i].Key = key
		c.rows[i].Value = c.arena[start:c.ends[i]:c.ends[i]]
		start = c.ends[i]
	}
	r, ok, err := format.MergeChain(c.rows, merger{op}, c.ops)
	r.Key = nil
	return r, ok, err
}

// findMerged resolves key at seq when its versions hold merge operands:
// it looks up the versions newest first down to a value row, a tombstone
// or the bottom and folds them by the rules of RFC 0010 (format.MergeChain).
// found is false when the key has no value in commit order; the caller
// judges the deadline of the row returned at its own time (rule 4). The
// row's value is the caller's.
func (db *DB) findMerged(rs *readState, key []byte, seq uint64) (format.Row, sstable.BlockRef, bool, error) {
	var c mergeChain
	for {
		r, ref, found, err := db.find(rs, key, seq)
		if err != nil {
			return format.Row{}, ref, false, err
		}
		if !found {
			break
		}
		done := c.add(&r)
		ref.Release()
		if done || r.Seq == 0 {
			break
		}
		seq = r.Seq - 1
	}
	r, ok, err := c.resolve(key, db.opts.MergeOperator)
	return r, sstable.BlockRef{}, ok, err
}
