package sstable

// Blocks: the unit data and index entries are stored in.
//
// A block (uncompressed) is a run of entries followed by its restart array:
//
//	+---------+---------+-----+-----------+-----+-----------+---------------+
//	| entry 0 | entry 1 | ... | restart 0 | ... | restart n | n+1: u32 (LE) |
//	+---------+---------+-----+-----------+-----+-----------+---------------+
//	                            u32 (LE) offsets of restart entries
//
// Each entry holds an internal key (user key + 8-byte trailer, see
// format.AppendInternalKey), prefix-compressed against the previous key:
//
//	+--------------+----------------+--------------+-----------+-------+-------+
//	| shared       | unshared       | value length | key delta | attrs | value |
//	| uvarint      | uvarint        | uvarint      | unshared  |       |       |
//	+--------------+----------------+--------------+-----------+-------+-------+
//
// The key is the first `shared` bytes of the previous key followed by the
// delta. attrs are format.AppendAttrs of the row: ts and expire_ts uvarints,
// each present only if the flags in the key's trailer say so. A restart
// entry (every RestartInterval-th) has shared == 0, so a key can be decoded
// starting at any restart; SeekGE binary-searches the restarts and Prev
// re-scans from the restart before the current entry.
//
// Index blocks use the same format (restart interval 1). A block with no
// entry is only its restart count, 0.

import (
	"encoding/binary"

	"github.com/mayflydb/mayfly/format"
)

var corruptf = format.Corruptf

// blockWriter builds one block.
type blockWriter struct {
	restartInterval int
	buf             []byte
	restarts        []uint32
	counter         int // entries since the last restart
	lastKey         []byte
	entries         int
}

func (w *blockWriter) reset() {
	w.buf = w.buf[:0]
	w.restarts = w.restarts[:0]
	w.counter = 0
	w.lastKey = w.lastKey[:0]
	w.entries = 0
}

// add appends an entry with internal key ikey, the attributes of r (per
// r.Flags, which must match ikey's trailer) and value. Keys must be added
// in increasing order; the caller checks that.
func (w *blockWriter) add(ikey []byte, r *format.Row, value []byte) {
	shared := 0
	if w.counter >= w.restartInterval || w.entries == 0 {
		w.restarts = append(w.restarts, uint32(len(w.buf)))
		w.counter = 0
	} else {
		n := min(len(ikey), len(w.lastKey))
		for shared < n && ikey[shared] == w.lastKey[shared] {
			shared++
		}
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(ikey)-shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(value)))
	w.buf = append(w.buf, ikey[shared:]...)
	w.buf = format.AppendAttrs(w.buf, r)
	w.buf = append(w.buf, value...)
	w.lastKey = append(w.lastKey[:0], ikey...)
	w.counter++
	w.entries++
}

// estimatedSize is the size finish would return.
func (w *blockWriter) estimatedSize() int {
	return len(w.buf) + 4*len(w.restarts) + 4
}

// finish appends the restart array and returns the block, which stays valid
// until the next reset.
func (w *blockWriter) finish() []byte {
	for _, r := range w.restarts {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, r)
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(w.restarts)))
	return w.buf
}

// blockIter walks the entries of one decoded block. Its zero value is an
// empty iterator. Errors are sticky and name the file and the block offset.
type blockIter struct {
	data        []byte
	restarts    int // offset of the restart array: entries end here
	numRestarts int
	file        string
	blockOff    int64
	isIndex     bool // values are block handles, also for tombstone keys

	off     int // offset of the current entry; restarts when past the end, -1 before the start
	nextOff int // offset of the entry after the current one

	key      []byte // current internal key: aliases data or keyBuf
	keyInBuf bool
	keyBuf   []byte
	shared   int // shared prefix length of the current entry
	row      format.Row
	err      error

	// Entries before the current one, remembered by prev (see pushPrev).
	prevEnts []prevEntry
	prevKeys []byte
}

// init points the iterator at block data (as stored, uncompressed) and
// checks its restart array.
func (it *blockIter) init(data []byte, file string, blockOff int64, isIndex bool) error {
	// Field by field rather than a whole-struct literal: a scan calls init
	// once per block, and copying a zeroed struct over this one costs more.
	it.data, it.file, it.blockOff, it.isIndex = data, file, blockOff, isIndex
	it.restarts, it.numRestarts, it.off, it.nextOff, it.shared = 0, 0, 0, 0, 0
	it.key, it.keyInBuf, it.keyBuf = nil, false, it.keyBuf[:0]
	it.row, it.err = format.Row{}, nil
	it.prevEnts, it.prevKeys = it.prevEnts[:0], it.prevKeys[:0]
	if len(data) < 4 {
		it.err = corruptf(file, blockOff, "block of %d bytes has no restart count", len(data))
		return it.err
	}
	n := binary.LittleEndian.Uint32(data[len(data)-4:])
	if uint64(n) > uint64(len(data)-4)/4 {
		it.err = corruptf(file, blockOff, "block of %d bytes claims %d restarts", len(data), n)
		return it.err
	}
	it.numRestarts = int(n)
	it.restarts = len(data) - 4 - 4*int(n)
	if (n == 0) != (it.restarts == 0) {
		it.err = corruptf(file, blockOff, "block has %d restarts for %d bytes of entries", n, it.restarts)
		return it.err
	}
	it.off = -1
	return nil
}

func (it *blockIter) valid() bool { return it.err == nil && it.off >= 0 && it.off < it.restarts }

func (it *blockIter) corrupt(off int, reason string) bool {
	if it.err == nil {
		it.err = corruptf(it.file, it.blockOff, "block entry at %d: %s", off, reason)
	}
	it.off = it.restarts
	return false
}

// restartOffset returns the offset of restart i, or -1 if corrupt.
func (it *blockIter) restartOffset(i int) int {
	v := binary.LittleEndian.Uint32(it.data[it.restarts+4*i:])
	if uint64(v) >= uint64(it.restarts) {
		it.corrupt(int(v), "restart offset outside the entries")
		return -1
	}
	return int(v)
}

func uvarintAt(b []byte, p, limit int) (uint64, int) {
	if p < limit && b[p] < 0x80 {
		return uint64(b[p]), p + 1
	}
	v, n := binary.Uvarint(b[p:limit])
	if n <= 0 {
		return 0, -1
	}
	return v, p + n
}

// entryHeader parses the three lengths of the entry at off and returns
// them with the offset of the key delta; reason is non-empty if corrupt.
func (it *blockIter) entryHeader(off int) (shared, unshared, vlen uint64, p int, reason string) {
	data, limit := it.data, it.restarts
	// Fast path: all three lengths below 128 take one byte each (the
	// common case for small keys and values).
	if off >= 0 && off+3 <= limit && limit <= len(data) {
		h := data[off : off+3 : off+3]
		if h[0]|h[1]|h[2] < 0x80 {
			shared, unshared, vlen, p = uint64(h[0]), uint64(h[1]), uint64(h[2]), off+3
			if unshared > uint64(limit-p) {
				return 0, 0, 0, 0, "key runs past the block"
			}
			return shared, unshared, vlen, p, ""
		}
	}
	if shared, p = uvarintAt(data, off, limit); p < 0 {
		return 0, 0, 0, 0, "bad shared length"
	}
	if unshared, p = uvarintAt(data, p, limit); p < 0 {
		return 0, 0, 0, 0, "bad key length"
	}
	if vlen, p = uvarintAt(data, p, limit); p < 0 {
		return 0, 0, 0, 0, "bad value length"
	}
	if unshared > uint64(limit-p) {
		return 0, 0, 0, 0, "key runs past the block"
	}
	return shared, unshared, vlen, p, ""
}

// decodeAt decodes the entry at off, whose shared prefix comes from it.key.
// At a restart the caller sets it.key = nil so that shared must be 0.
func (it *blockIter) decodeAt(off int) bool {
	if it.err != nil {
		return false
	}
	shared, unshared, vlen, p, reason := it.entryHeader(off)
	if reason != "" {
		return it.corrupt(off, reason)
	}
	if shared > uint64(len(it.key)) {
		return it.corrupt(off, "shared prefix longer than the previous key")
	}
	it.setKey(int(shared), it.data[p:p+int(unshared)])
	return it.finishEntry(off, p+int(unshared), vlen)
}

// finishEntry decodes the rest of the entry at off, whose key is it.key and
// whose attributes start at p, and makes it current.
func (it *blockIter) finishEntry(off, p int, vlen uint64) bool {
	data, limit := it.data, it.restarts
	ukey, seq, flags, ok := format.SplitInternalKey(it.key)
	if !ok {
		return it.corrupt(off, "malformed internal key")
	}
	r := &it.row
	r.Key, r.Seq, r.Flags, r.TS, r.ExpireTS = ukey, seq, flags, 0, 0
	if flags&(format.FlagHasTS|format.FlagHasExpire) != 0 {
		n, ok := format.DecodeAttrs(data[p:limit], r)
		if !ok {
			return it.corrupt(off, "bad row attributes")
		}
		p += n
	}
	if vlen > uint64(limit-p) {
		return it.corrupt(off, "value runs past the block")
	}
	end := p + int(vlen)
	if !format.FlagsHaveValue(flags) && !it.isIndex {
		if vlen != 0 {
			return it.corrupt(off, "tombstone or deadline row with a value")
		}
		r.Value = nil
	} else {
		r.Value = data[p:end:end]
	}
	it.off, it.nextOff = off, end
	return true
}

// seekRestart positions at restart i.
func (it *blockIter) seekRestart(i int) bool {
	off := it.restartOffset(i)
	if off < 0 {
		return false
	}
	it.key = nil
	it.keyInBuf = false
	return it.decodeAt(off)
}

func (it *blockIter) first() bool {
	if it.err != nil {
		return false
	}
	if it.numRestarts == 0 {
		it.off = it.restarts
		return false
	}
	return it.seekRestart(0)
}

func (it *blockIter) last() bool {
	if it.err != nil {
		return false
	}
	if it.numRestarts == 0 {
		it.off = -1
		return false
	}
	if !it.seekRestart(it.numRestarts - 1) {
		return false
	}
	for it.nextOff < it.restarts {
		if !it.decodeAt(it.nextOff) {
			return false
		}
	}
	return true
}

func (it *blockIter) next() bool {
	if it.err != nil {
		return false
	}
	if it.off < 0 {
		return it.first()
	}
	if it.off >= it.restarts || it.nextOff >= it.restarts {
		it.off = it.restarts
		return false
	}
	return it.decodeAt(it.nextOff)
}

func (it *blockIter) prev() bool {
	if it.err != nil {
		return false
	}
	if it.off >= it.restarts {
		return it.last()
	}
	target := it.off
	if target <= 0 {
		it.off = -1
		return false
	}
	if n := len(it.prevEnts); n > 0 && it.prevEnts[n-1].end == target {
		return it.popPrev()
	}
	// The last restart before target.
	lo, hi := 0, it.numRestarts
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		ro := it.restartOffset(m)
		if ro < 0 {
			return false
		}
		if ro < target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		it.off = -1
		return false
	}
	// Re-scan from that restart, remembering the entries passed so that
	// the following Prev calls need no scan.
	it.prevEnts, it.prevKeys = it.prevEnts[:0], it.prevKeys[:0]
	if !it.seekRestart(lo - 1) {
		return false
	}
	for it.nextOff < target {
		it.pushPrev()
		if !it.decodeAt(it.nextOff) {
			return false
		}
	}
	if it.nextOff != target {
		return it.corrupt(target, "entries do not chain to the current entry")
	}
	return true
}

// prevEntry is an entry remembered by prev: its offsets and where its key
// is in prevKeys.
type prevEntry struct {
	off, end     int
	kstart, kend int
}

// Bounds on what prev remembers: beyond them it drops the oldest entries,
// so a block with few restarts costs a re-scan per maxPrevEntries steps.
const (
	maxPrevEntries  = 256
	maxPrevKeyBytes = 64 << 10
)

// pushPrev remembers the current entry.
func (it *blockIter) pushPrev() {
	if len(it.prevEnts) >= 2*maxPrevEntries || len(it.prevKeys)+len(it.key) > 2*maxPrevKeyBytes {
		// Keep the newer half (or nothing, if the keys are that large).
		keep := it.prevEnts[len(it.prevEnts)/2:]
		if len(keep) > 0 && len(it.prevKeys)-keep[0].kstart+len(it.key) <= 2*maxPrevKeyBytes {
			base := keep[0].kstart
			n := copy(it.prevKeys, it.prevKeys[base:])
			it.prevKeys = it.prevKeys[:n]
			m := copy(it.prevEnts, keep)
			it.prevEnts = it.prevEnts[:m]
			for i := range it.prevEnts {
				it.prevEnts[i].kstart -= base
				it.prevEnts[i].kend -= base
			}
		} else {
			it.prevEnts, it.prevKeys = it.prevEnts[:0], it.prevKeys[:0]
		}
		if len(it.key) > 2*maxPrevKeyBytes {
			return
		}
	}
	start := len(it.prevKeys)
	it.prevKeys = append(it.prevKeys, it.key...)
	it.prevEnts = append(it.prevEnts, prevEntry{off: it.off, end: it.nextOff, kstart: start, kend: len(it.prevKeys)})
}

// popPrev moves to the last remembered entry.
func (it *blockIter) popPrev() bool {
	e := it.prevEnts[len(it.prevEnts)-1]
	it.prevEnts = it.prevEnts[:len(it.prevEnts)-1]
	_, unshared, vlen, p, reason := it.entryHeader(e.off)
	if reason != "" {
		return it.corrupt(e.off, reason)
	}
	it.key = it.prevKeys[e.kstart:e.kend:e.kend]
	it.keyInBuf = false
	return it.finishEntry(e.off, p+int(unshared), vlen)
}

// restartKey returns the internal key stored whole at restart i.
func (it *blockIter) restartKey(i int) ([]byte, bool) {
	off := it.restartOffset(i)
	if off < 0 {
		return nil, false
	}
	data, limit := it.data, it.restarts
	shared, p := uvarintAt(data, off, limit)
	if p < 0 || shared != 0 {
		return nil, it.corrupt(off, "bad restart entry")
	}
	unshared, p := uvarintAt(data, p, limit)
	if p < 0 {
		return nil, it.corrupt(off, "bad key length")
	}
	_, p = uvarintAt(data, p, limit)
	if p < 0 {
		return nil, it.corrupt(off, "bad value length")
	}
	if unshared > uint64(limit-p) || unshared < format.TrailerLen {
		return nil, it.corrupt(off, "bad restart key")
	}
	return data[p : p+int(unshared)], true
}

// seekGE positions at the first entry whose internal key is >= ikey, which
// must be a valid internal key.
func (it *blockIter) seekGE(ikey []byte) bool {
	if it.err != nil {
		return false
	}
	if it.numRestarts == 0 {
		it.off = it.restarts
		return false
	}
	// Find the first restart whose key is >= ikey; the answer lies between
	// the restart before it and it.
	lo, hi := 0, it.numRestarts
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		k, ok := it.restartKey(m)
		if !ok {
			return false
		}
		if format.CompareInternal(k, ikey) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo > 0 {
		lo--
	}
	off := it.restartOffset(lo)
	if off < 0 {
		return false
	}
	it.key = nil
	it.keyInBuf = false
	return it.scanGE(off, ikey)
}

// scanGE walks forward from the restart entry at off to the first entry
// whose key is >= ikey and makes it current. The entries before it are
// skipped with only their keys decoded: their attributes and values are
// stepped over, not parsed.
func (it *blockIter) scanGE(off int, ikey []byte) bool {
	data, limit := it.data, it.restarts
	for off < limit {
		var shared, unshared, vlen uint64
		var p int
		if off+3 <= limit && data[off]|data[off+1]|data[off+2] < 0x80 {
			// The common case: three one-byte lengths.
			shared, unshared, vlen, p = uint64(data[off]), uint64(data[off+1]), uint64(data[off+2]), off+3
			if unshared > uint64(limit-p) {
				return it.corrupt(off, "key runs past the block")
			}
		} else {
			var reason string
			if shared, unshared, vlen, p, reason = it.entryHeader(off); reason != "" {
				return it.corrupt(off, reason)
			}
		}
		if shared > uint64(len(it.key)) {
			return it.corrupt(off, "shared prefix longer than the previous key")
		}
		it.setKey(int(shared), data[p:p+int(unshared)])
		p += int(unshared)
		n := len(it.key)
		if n < format.TrailerLen {
			return it.corrupt(off, "malformed internal key")
		}
		if format.CompareInternal(it.key, ikey) >= 0 {
			return it.finishEntry(off, p, vlen)
		}
		flags := it.key[n-format.TrailerLen]
		if flags&^format.KnownFlags != 0 {
			return it.corrupt(off, "malformed internal key")
		}
		if flags&format.FlagHasTS != 0 {
			if p = skipUvarint(data, p, limit); p < 0 {
				return it.corrupt(off, "bad row attributes")
			}
		}
		if flags&format.FlagHasExpire != 0 {
			if p = skipUvarint(data, p, limit); p < 0 {
				return it.corrupt(off, "bad row attributes")
			}
		}
		if vlen > uint64(limit-p) {
			return it.corrupt(off, "value runs past the block")
		}
		off = p + int(vlen)
	}
	it.off = it.restarts
	return false
}

// setKey makes the current key the first shared bytes of the previous key
// followed by delta (shared <= len(it.key)).
func (it *blockIter) setKey(shared int, delta []byte) {
	if shared == 0 {
		it.key = delta
		it.keyInBuf = false
	} else {
		if !it.keyInBuf {
			it.keyBuf = append(it.keyBuf[:0], it.key[:shared]...)
			it.keyInBuf = true
		} else {
			it.keyBuf = it.keyBuf[:shared]
		}
		it.keyBuf = append(it.keyBuf, delta...)
		it.key = it.keyBuf
	}
	it.shared = shared
}

// skipUvarint returns the offset after the uvarint at p (which must end
// before limit and be at most 10 bytes), or -1.
func skipUvarint(b []byte, p, limit int) int {
	for i := 0; i < binary.MaxVarintLen64 && p < limit; i++ {
		c := b[p]
		p++
		if c < 0x80 {
			return p
		}
	}
	return -1
}
