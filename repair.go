package mayfly

// Repair: rebuilding the manifest from the tables and WAL segments.
//
// Repair reads every row it can from every table in sst/ and every WAL
// segment in wal/ that the manifest (if one is readable) does not already
// account for, merges them by internal key (user key ascending, sequence
// number descending), and writes the result as one sorted run of new tables
// in the bottom level. It keeps every version and every tombstone: only
// exact duplicates (same user key and sequence number, e.g. a row both in a
// WAL segment and in the table it was flushed to) collapse into one, and
// then the row of the newest table wins (the highest file number; a table
// beats a WAL segment), since a compaction output is newer than its inputs.
// Level 0 cannot hold the tables as they are: it is read newest first by
// largest sequence number, and two tables' sequence ranges may overlap.
//
// Nothing is deleted that was not copied first. The layout after a repair
// that wrote manifest version V:
//
//	sst/NNNNNN.sst                   the new tables, all in the bottom level
//	manifest/<V>.manifest            the new manifest version
//	lost/repair-<V>/sst/NNNNNN.sst   every table that was in sst/ (read,
//	                                 partly read, or unreadable)
//	lost/repair-<V>/wal/NNNNNN.wal   every WAL segment it converted or could
//	                                 not read
//	lost/repair-<V>/manifest/...     every manifest version that did not
//	                                 decode
//
// The steps, each safe to interrupt: (1) write the new tables; (2) copy the
// inputs under lost/repair-<V>/; (3) write manifest version V; (4) remove
// the inputs from sst/, wal/ and manifest/. Interrupted before (3), the
// database is as it was plus unreferenced copies, and a second Repair reads
// the new tables too (their rows collapse with the old). Interrupted after
// (3), the old tables are orphans that the next Open removes, and the old
// segments lie below the manifest's MinLogNum: their copies are under lost/.

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
)

// RepairReport says what Repair did.
type RepairReport struct {
	// PreviousManifest describes the manifest Repair found: "none", the
	// version it read, or why none could be read.
	PreviousManifest string
	// ManifestVersion is the manifest version Repair wrote.
	ManifestVersion uint64
	// LostDir is the directory the inputs were moved to, "lost/repair-<V>".
	LostDir string

	TablesRead      int // tables whose index could be read (their intact blocks were kept)
	WALSegmentsRead int // WAL segments converted (wholly or up to damage)
	WALRecords      int // intact WAL records read
	// WALRecordsFlushed counts the intact WAL records left out because a
	// readable table holds a newer sequence number: memtables are flushed
	// in commit order, so their rows were flushed already, and converting
	// them again could bring back versions a compaction has since dropped.
	WALRecordsFlushed int
	RowsRead          uint64 // rows read from tables and WAL records
	RowsKept          uint64 // rows in the new tables
	Duplicates        uint64 // rows dropped as exact duplicates (same key and sequence) of a kept row
	TablesWritten     int    // new tables, all in the bottom level
	LastSeq           uint64 // the new manifest's LastSeq

	// MissingTables are tables the previous manifest listed that were not
	// in sst/: their rows are lost unless restored before Repair.
	MissingTables []string
	// Unreadable lists what Repair could not read; each entry's bytes are
	// under LostDir, nothing was deleted.
	Unreadable []RepairLoss
	// Moved maps each input's old name to its copy under LostDir.
	Moved []MovedFile
}

// RepairLoss is a part of a file that Repair could not read.
type RepairLoss struct {
	File    string // the file's name before Repair, e.g. "sst/000012.sst"
	MovedTo string // where its bytes are now
	Offset  int64  // the first byte not read
	Length  int64  // how many bytes from Offset were not read; the whole rest of the file for a WAL segment
	Reason  string
}

// MovedFile is an input Repair moved aside.
type MovedFile struct{ From, To string }

// Repair rebuilds the manifest of the database at location (a directory or
// an S3 URL, as for Open) from the tables and WAL segments present, for a
// database whose manifest is lost or damaged or whose tables are damaged
// (see the comment at the top of repair.go and RFC 0006). The database must
// not be open: Repair takes the writer lock (an object store has none; the
// caller must make sure no writer runs). opts is used for Storage, Clock,
// BlockSize, Compression, BloomBitsPerKey, TargetFileSize and
// MergeOperator; ReadOnly fails with ErrReadOnly.
//
// The new manifest records the merge operator the previous one recorded.
// When no readable manifest records one, it records the name of
// opts.MergeOperator if set; and if the rows kept include merge operands
// while no name is known, Repair fails with ErrMergeOperator and changes
// nothing, since those operands could not be read back: set
// opts.MergeOperator to the operator that wrote them. An opts.MergeOperator
// of another name than the recorded one fails the same way.
//
// Every readable row is kept; what cannot be read is reported in the
// RepairReport and moved, with every other input, under lost/repair-<V>/,
// never deleted. On an error before the new manifest version is written
// the database is left as it was (the new tables and copies are removed)
// and the report is nil. An error removing the inputs after the manifest
// was written is returned with the report: the repair took effect.
func Repair(location string, opts *Options) (*RepairReport, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.ReadOnly {
		return nil, fmt.Errorf("mayfly: repair: %w", ErrReadOnly)
	}
	store := o.Storage
	if store == nil {
		if store, err = openLocation(context.Background(), location, false); err != nil {
			return nil, err
		}
		defer store.Close()
	}
	lock, err := store.Lock(true)
	if err != nil {
		return nil, fmt.Errorf("mayfly: repair %s: %w", location, err)
	}
	defer lock.Close()
	var src clock.Clock = o.Clock
	if src == nil {
		src = clock.NewSystem()
	}
	r := &repairer{store: store, opts: o, now: src.NowMillis(), rep: &RepairReport{}}
	defer r.close()
	return r.run()
}

// repairer holds the state of one Repair.
type repairer struct {
	store storage.Storage
	opts  *Options
	now   int64
	rep   *RepairReport

	old       *manifest.State // the previous manifest, if one was readable
	version   uint64          // the manifest version to write
	maxNum    uint64          // highest file number seen
	clockHWM  int64
	badMans   []string      // manifest versions that do not decode
	tables    []repairTable // tables whose index was read
	maxSeq    uint64        // the largest sequence number in a readable table
	operands  uint64        // merge operands among the rows kept
	segments  []uint64      // WAL segments converted
	mems      []*memtable.Memtable
	sources   []repairSource
	written   []*manifest.FileMeta
	copies    []string // copies made under lost/, removed if the repair fails
	toRemove  []string // inputs to remove once the manifest is written
	committed bool
}

type repairTable struct {
	num    uint64
	reader *sstable.Reader
	salv   *sstable.SalvageIter
}

func (r *repairer) close() {
	for _, t := range r.tables {
		t.reader.Close()
	}
	for _, m := range r.mems {
		m.Unref()
	}
	for _, s := range r.sources {
		s.close()
	}
	if r.committed {
		return
	}
	// Failed before the manifest: what Repair created is garbage.
	for _, m := range r.written {
		_ = r.store.Remove(tableName(m.Num))
	}
	for _, c := range r.copies {
		_ = r.store.Remove(c)
	}
}

func (r *repairer) run() (*RepairReport, error) {
	if err := r.loadManifest(); err != nil {
		return nil, err
	}
	if _, err := r.mergeOperatorName(); err != nil {
		return nil, err
	}
	if err := r.chooseLostDir(); err != nil {
		return nil, err
	}
	if err := r.openTables(); err != nil {
		return nil, err
	}
	if err := r.readWAL(); err != nil {
		return nil, err
	}
	if err := r.writeTables(); err != nil {
		return nil, err
	}
	if _, err := r.mergeOperatorName(); err != nil {
		return nil, err // before anything is copied; close removes the new tables
	}
	for _, t := range r.tables {
		for _, d := range t.salv.Damaged() {
			r.lose(tableName(t.num), int64(d.Offset), int64(d.Length)+5, d.Err)
		}
	}
	if err := r.moveAside(); err != nil {
		return nil, err
	}
	if err := r.writeManifest(); err != nil {
		return nil, err
	}
	r.committed = true
	var errs []error
	for _, name := range r.toRemove {
		if err := r.store.Remove(name); err != nil && !errors.Is(err, storage.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return r.rep, fmt.Errorf("mayfly: repair wrote manifest version %d but could not remove every input (their copies are under %s): %w",
			r.version, r.rep.LostDir, errors.Join(errs...))
	}
	return r.rep, nil
}

// loadManifest reads the newest readable manifest version, if any, and
// notes the versions that do not decode. An I/O error fails the repair.
func (r *repairer) loadManifest() error {
	names, err := r.store.List(manifest.Dir)
	if err != nil {
		return err
	}
	var newest uint64
	for _, name := range names {
		v, ok := manifest.ParseVersionName(name)
		if !ok {
			continue
		}
		newest = max(newest, v)
		data, err := storage.ReadAll(r.store, name)
		if errors.Is(err, storage.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("mayfly: repair: read %s: %w", name, err)
		}
		st, err := manifest.Decode(name, data)
		if err != nil {
			r.badMans = append(r.badMans, name)
			r.lose(name, 0, int64(len(data)), err)
			r.rep.PreviousManifest = fmt.Sprintf("unreadable: %v", err)
			continue
		}
		// Versions are listed in ascending order: the last readable one is
		// the newest.
		r.old = st
		r.rep.PreviousManifest = fmt.Sprintf("version %d", v)
	}
	r.version = newest + 1
	switch {
	case r.rep.PreviousManifest == "":
		r.rep.PreviousManifest = "none"
	case r.old != nil && len(r.badMans) > 0:
		r.rep.PreviousManifest += fmt.Sprintf(" (%d newer or older versions unreadable)", len(r.badMans))
	}
	if r.old != nil {
		r.maxNum = r.old.NextFileNum - 1
		r.clockHWM = r.old.ClockHWM
	}
	return nil
}

// chooseLostDir names the directory the inputs move to after the new
// manifest version, or after every earlier repair's if that is higher (a
// database whose manifest was lost again restarts its versions at 1).
func (r *repairer) chooseLostDir() error {
	names, err := r.store.List("lost")
	if err != nil {
		return err
	}
	n := r.version
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, "lost/repair-")
		if i := strings.IndexByte(rest, '/'); ok && i > 0 {
			if v, err := strconv.ParseUint(rest[:i], 10, 64); err == nil && v >= n {
				n = v + 1
			}
		}
	}
	r.rep.LostDir = fmt.Sprintf("lost/repair-%06d", n)
	// Losses recorded while loading the manifest name the directory too.
	for i := range r.rep.Unreadable {
		r.rep.Unreadable[i].MovedTo = r.lostName(r.rep.Unreadable[i].File)
	}
	return nil
}

// lose records that bytes [off, off+n) of file could not be read.
func (r *repairer) lose(file string, off, n int64, why error) {
	r.rep.Unreadable = append(r.rep.Unreadable, RepairLoss{
		File: file, MovedTo: r.lostName(file), Offset: off, Length: n, Reason: why.Error(),
	})
}

func (r *repairer) lostName(name string) string { return r.rep.LostDir + "/" + name }

// openTables opens every table in sst/ and reads its index. A table that
// does not open or whose index is damaged is unreadable as a whole.
func (r *repairer) openTables() error {
	names, err := r.store.List("sst")
	if err != nil {
		return err
	}
	present := make(map[uint64]bool)
	for _, name := range names {
		num, ok := parseNum(name, "sst", ".sst")
		if !ok {
			continue
		}
		present[num] = true
		r.maxNum = max(r.maxNum, num)
		r.toRemove = append(r.toRemove, name)
		t, size, err := r.openTable(num)
		if err != nil {
			if !errors.Is(err, ErrCorruption) {
				return fmt.Errorf("mayfly: repair: %w", err)
			}
			r.lose(name, 0, size, err)
			continue
		}
		r.tables = append(r.tables, t)
		r.clockHWM = max(r.clockHWM, t.reader.Properties().CreationTime)
		r.maxSeq = max(r.maxSeq, t.reader.Properties().LargestSeq)
		r.sources = append(r.sources, &tableSource{it: t.salv, rank: num})
	}
	r.rep.TablesRead = len(r.tables)
	if r.old != nil {
		for _, lvl := range r.old.Levels {
			for _, m := range lvl {
				if !present[m.Num] {
					r.rep.MissingTables = append(r.rep.MissingTables, tableName(m.Num))
				}
			}
		}
		slices.Sort(r.rep.MissingTables)
	}
	return nil
}

// openTable opens table num for salvage; size is the file's size (-1 if
// it could not be opened).
func (r *repairer) openTable(num uint64) (repairTable, int64, error) {
	f, err := r.store.Open(tableName(num))
	if err != nil {
		return repairTable{}, -1, err
	}
	size := f.Size()
	rd, err := sstable.Open(f, sstable.ReaderOptions{Name: tableName(num)})
	if err != nil {
		f.Close()
		return repairTable{}, size, err
	}
	s, err := rd.NewSalvageIter()
	if err != nil {
		rd.Close()
		return repairTable{}, size, err
	}
	return repairTable{num: num, reader: rd, salv: s}, size, nil
}

// readWAL replays the WAL segments the previous manifest does not mark as
// flushed (all of them without one) into one memtable each. A damaged
// header or record ends what is read of its segment; the rest is reported.
func (r *repairer) readWAL() error {
	names, err := r.store.List("wal")
	if err != nil {
		return err
	}
	var minLog uint64
	if r.old != nil {
		minLog = r.old.MinLogNum
	}
	for _, name := range names {
		seg, ok := parseNum(name, "wal", ".wal")
		if !ok {
			continue
		}
		r.maxNum = max(r.maxNum, seg)
		if seg < minLog {
			continue // flushed, as a readable manifest proves: left as it is
		}
		r.toRemove = append(r.toRemove, name)
		mem := memtable.New(seg)
		r.mems = append(r.mems, mem)
		res, err := wal.Replay(r.store, name, seg, func(payload []byte) error {
			br, err := format.NewBatchReader(payload)
			if err != nil {
				return err
			}
			r.clockHWM = max(r.clockHWM, br.Header().CommitTS)
			if br.Header().Count == 0 {
				return nil
			}
			if br.Header().Seq <= r.maxSeq {
				// A batch's rows share one memtable, which was flushed
				// before the table holding maxSeq was written.
				r.rep.WALRecordsFlushed++
				return nil
			}
			return mem.ApplyBatch(payload)
		})
		var ce *format.CorruptionError
		switch {
		case errors.As(err, &ce):
			r.lose(name, ce.Offset, res.FileSize-ce.Offset, err)
		case err != nil:
			return fmt.Errorf("mayfly: repair: replay %s: %w", name, err)
		case res.Torn():
			r.lose(name, res.TornOffset, res.FileSize-res.TornOffset, res.TornError(name))
		}
		r.rep.WALRecords += res.Records
		if res.Records > 0 {
			r.rep.WALSegmentsRead++
			r.segments = append(r.segments, seg)
			r.sources = append(r.sources, &iterSource{it: mem.NewIter()})
		}
	}
	return nil
}

// writeTables merges the sources into new tables of the bottom level,
// split at TargetFileSize between two user keys.
func (r *repairer) writeTables() error {
	next := r.maxNum + 1
	m := newRepairMerge(r.sources)
	var (
		w       *sstable.Writer
		obj     storage.ObjectWriter
		num     uint64
		lastKey []byte
		lastSeq uint64
		have    bool
	)
	finish := func() error {
		props, err := w.Finish()
		w = nil
		if err != nil {
			obj.Abort()
			return err
		}
		if err := obj.Commit(); err != nil {
			return err
		}
		r.written = append(r.written, metaFromProps(num, props, r.now))
		return nil
	}
	fail := func(err error) error {
		if w != nil {
			w.Abort()
			obj.Abort()
		}
		return fmt.Errorf("mayfly: repair: %w", err)
	}
	for {
		row, ok := m.next()
		if !ok {
			break
		}
		r.rep.RowsRead++
		same := have && string(row.Key) == string(lastKey)
		if same && row.Seq == lastSeq {
			r.rep.Duplicates++
			continue
		}
		if w != nil && !same && int64(w.EstimatedSize()) >= r.opts.TargetFileSize {
			if err := finish(); err != nil {
				return fail(err)
			}
		}
		if w == nil {
			num, next = next, next+1
			o, err := r.store.Create(tableName(num))
			if err != nil {
				return fail(err)
			}
			obj = o
			w = sstable.NewWriter(o, sstable.WriterOptions{
				BlockSize: r.opts.BlockSize, RestartInterval: 16, Compression: r.opts.Compression,
				BloomBitsPerKey: r.opts.BloomBitsPerKey, CreationTime: r.now,
			})
		}
		if err := w.Add(row); err != nil {
			return fail(err)
		}
		if row.Flags&format.FlagHasTS != 0 {
			r.clockHWM = max(r.clockHWM, row.TS)
		}
		if row.Flags&format.FlagMerge != 0 {
			r.operands++
		}
		r.rep.RowsKept++
		r.rep.LastSeq = max(r.rep.LastSeq, row.Seq)
		lastKey, lastSeq, have = append(lastKey[:0], row.Key...), row.Seq, true
	}
	if err := m.err(); err != nil {
		return fail(err)
	}
	if w != nil {
		if err := finish(); err != nil {
			return fail(err)
		}
	}
	r.rep.TablesWritten = len(r.written)
	r.maxNum = next - 1
	return nil
}

// moveAside copies every input under the lost directory (the first half of
// a move; the inputs are removed once the manifest is written).
func (r *repairer) moveAside() error {
	r.toRemove = append(r.toRemove, r.badMans...)
	for _, name := range r.toRemove {
		to := r.lostName(name)
		if err := r.copyObject(name, to); err != nil {
			return fmt.Errorf("mayfly: repair: copy %s to %s: %w", name, to, err)
		}
		r.rep.Moved = append(r.rep.Moved, MovedFile{From: name, To: to})
	}
	return nil
}

func (r *repairer) copyObject(from, to string) error {
	in, err := r.store.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := r.store.Create(to)
	if err != nil {
		return err
	}
	r.copies = append(r.copies, to)
	if _, err := io.Copy(out, io.NewSectionReader(in, 0, in.Size())); err != nil {
		out.Abort()
		return err
	}
	return out.Commit()
}

// writeManifest writes the new manifest version: the new tables in the
// bottom level, every number ever used below NextFileNum, every segment
// below MinLogNum.
func (r *repairer) writeManifest() error {
	op, err := r.mergeOperatorName()
	if err != nil {
		return err
	}
	st := &manifest.State{
		MergeOperator: op,
		NextFileNum:   r.maxNum + 1,
		LastSeq:       r.rep.LastSeq,
		ClockHWM:      r.clockHWM,
		MinLogNum:     r.maxNum + 1,
		WriterEpoch:   1,
	}
	if r.old != nil {
		st.LastSeq = max(st.LastSeq, r.old.LastSeq)
		st.WriterEpoch = r.old.WriterEpoch + 1
	}
	r.rep.LastSeq = st.LastSeq
	st.Levels[bottomLevel] = r.written
	if err := manifest.Write(r.store, r.version, st); err != nil {
		return fmt.Errorf("mayfly: repair: %w", err)
	}
	r.rep.ManifestVersion = r.version
	return nil
}

// mergeOperatorName returns the merge operator name the new manifest
// records: the previous manifest's, else that of Options.MergeOperator. It
// fails when the two differ, or when the rows kept so far hold merge
// operands and neither names an operator.
func (r *repairer) mergeOperatorName() (string, error) {
	recorded, opt := "", ""
	if r.old != nil {
		recorded = r.old.MergeOperator
	}
	if r.opts.MergeOperator != nil {
		opt = r.opts.MergeOperator.Name()
	}
	switch {
	case recorded != "" && opt != "" && opt != recorded:
		return "", fmt.Errorf("mayfly: repair: %w: the manifest records merge operator %q, Options.MergeOperator is %q",
			ErrMergeOperator, recorded, opt)
	case recorded != "":
		return recorded, nil
	case opt == "" && r.operands > 0:
		return "", fmt.Errorf("mayfly: repair: %w: the rows hold %d merge operands and no readable manifest records their operator; "+
			"set Options.MergeOperator (mayfly repair --merge-operator NAME) to the operator that wrote them",
			ErrMergeOperator, r.operands)
	}
	return opt, nil
}

// String summarises the report on a few lines.
func (rep *RepairReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "previous manifest: %s\n", rep.PreviousManifest)
	fmt.Fprintf(&b, "read %d tables and %d WAL segments (%d records, %d of them already flushed): %d rows, %d exact duplicates dropped\n",
		rep.TablesRead, rep.WALSegmentsRead, rep.WALRecords, rep.WALRecordsFlushed, rep.RowsRead, rep.Duplicates)
	fmt.Fprintf(&b, "wrote %d tables in L%d holding %d rows, manifest version %d (last sequence %d)\n",
		rep.TablesWritten, bottomLevel, rep.RowsKept, rep.ManifestVersion, rep.LastSeq)
	for _, m := range rep.MissingTables {
		fmt.Fprintf(&b, "missing: %s was listed in the previous manifest and is not present; its rows are lost\n", m)
	}
	for _, l := range rep.Unreadable {
		fmt.Fprintf(&b, "unreadable: %s, %d bytes at offset %d (kept as %s): %s\n", l.File, l.Length, l.Offset, l.MovedTo, l.Reason)
	}
	fmt.Fprintf(&b, "moved %d inputs under %s\n", len(rep.Moved), rep.LostDir)
	return b.String()
}

// repairSource is one sorted input of the merge.
type repairSource interface {
	next() bool
	row() *format.Row
	err() error
	close()
	// rank orders exact duplicates: the highest wins.
	rankOf() uint64
}

type tableSource struct {
	it   *sstable.SalvageIter
	rank uint64
}

func (s *tableSource) next() bool       { return s.it.Next() }
func (s *tableSource) row() *format.Row { return s.it.Row() }
func (s *tableSource) err() error       { return s.it.Error() }
func (s *tableSource) close()           {}
func (s *tableSource) rankOf() uint64   { return s.rank }

// iterSource reads a WAL segment's memtable; its rank, 0, is below every
// table's.
type iterSource struct {
	it      format.Iterator
	started bool
}

func (s *iterSource) next() bool {
	if !s.started {
		s.started = true
		return s.it.First()
	}
	return s.it.Next()
}
func (s *iterSource) row() *format.Row { return s.it.Row() }
func (s *iterSource) err() error       { return s.it.Error() }
func (s *iterSource) close()           { s.it.Close() }
func (s *iterSource) rankOf() uint64   { return 0 }

// repairMerge yields the rows of its sources in internal-key order; of rows
// with the same key and sequence number, the one of the highest-ranked
// source comes first. A row is valid until the following call to next.
type repairMerge struct {
	h    repairHeap
	last repairSource // the source of the row returned last, to advance
	fail error
}

func newRepairMerge(sources []repairSource) *repairMerge {
	m := &repairMerge{}
	for _, s := range sources {
		m.push(s)
	}
	return m
}

func (m *repairMerge) push(s repairSource) {
	if s.next() {
		heap.Push(&m.h, s)
	} else if err := s.err(); err != nil && m.fail == nil {
		m.fail = err
	}
}

func (m *repairMerge) next() (*format.Row, bool) {
	if m.last != nil {
		m.push(m.last)
		m.last = nil
	}
	if m.fail != nil || len(m.h) == 0 {
		return nil, false
	}
	m.last = heap.Pop(&m.h).(repairSource)
	return m.last.row(), true
}

func (m *repairMerge) err() error { return m.fail }

type repairHeap []repairSource

func (h repairHeap) Len() int { return len(h) }
func (h repairHeap) Less(i, j int) bool {
	a, b := h[i].row(), h[j].row()
	if c := format.CompareRows(a, b); c != 0 {
		return c < 0
	}
	return h[i].rankOf() > h[j].rankOf()
}
func (h repairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *repairHeap) Push(x any)   { *h = append(*h, x.(repairSource)) }
func (h *repairHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}
