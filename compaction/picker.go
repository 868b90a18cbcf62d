package compaction

import (
	"math"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
)

// NumLevels is the number of levels in the tree; the last is the bottom.
const NumLevels = manifest.NumLevels

// Bottom is the index of the bottom level.
const Bottom = NumLevels - 1

// Table is what the picker knows of a live SSTable: its manifest entry,
// which holds its key bounds and statistics, and whether a compaction is
// reading it. A pick returns the Table values it was given, so the caller
// recognises its tables by Meta (or the file number in it).
type Table struct {
	Meta *manifest.FileMeta
	// Compacting is set while a compaction reads the table.
	Compacting bool
	// Shadows is how many rows of older tables this level-0 table's rows
	// supersede, as counted by the flush that wrote it (the merge folds
	// that found a state beneath, RFC 0010 rule 8); 0 when not known.
	// pickShadowed decides by it.
	Shadows uint64
	// NewKeys is how many of this level-0 table's rows are their key's
	// first version (a conditional insert found none, live or dead): rows
	// that overwrite nothing beneath. 0 when not known. mergeFirst
	// decides by it.
	NewKeys uint64
}

// Levels is a version as the picker sees it: L0 newest first, other levels
// sorted by key and non-overlapping.
type Levels [NumLevels][]*Table

// PickerOptions are the policy knobs (see RFC 0004).
type PickerOptions struct {
	L0CompactionThreshold int
	// L0SlowdownWritesThreshold is the level-0 file count at which the
	// write path slows down; short-lived tables count toward level 0's
	// file trigger only as that count is approached (ShortLivedL0Limit).
	// 0 means as many as L0CompactionThreshold.
	L0SlowdownWritesThreshold int
	LBaseMaxBytes             int64
	LevelSizeRatio            float64
	ExpiredBytesRatio         float64
	// PeriodicIntervalMillis is the periodic compaction interval; 0 disables.
	PeriodicIntervalMillis int64
	// ShadowedRatio is the share of the rows a level-0 compaction would
	// read that must be superseded by newer rows for pickShadowed to run
	// it; 0 and 1 disable that pick.
	ShadowedRatio float64
	// MemtableSize is the size at which memtables are flushed; it scales
	// how many short-lived tables level 0 may hold (ShortLivedScale). 0
	// means ShortLivedReferenceMemtable (no scaling).
	MemtableSize int64
}

// Kind says why a compaction was picked.
type Kind uint8

// Kinds of compaction.
const (
	KindL0       Kind = iota // L0 file count
	KindLevel                // level size over target
	KindDrop                 // whole files expired: manifest edit only
	KindMove                 // trivial move: manifest edit only
	KindExpired              // expired bytes worth rewriting
	KindPeriodic             // due by PeriodicCompactionInterval
	KindManual               // Compact or ReclaimExpired
	KindShadowed             // level 0 holds rows superseded by newer ones
	KindL0Merge              // level 0's newest tables into one level-0 table
	KindL0Split              // all of level 0 into key-disjoint level-0 slices
)

// NumKinds is the number of kinds.
const NumKinds = int(KindL0Split) + 1

var kindNames = [NumKinds]string{"l0", "level", "drop", "move", "expired", "periodic", "manual", "shadowed", "l0merge", "l0split"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Input is the tables a compaction reads from one level.
type Input struct {
	Level  int
	Tables []*Table
}

// Pick is a compaction to run.
type Pick struct {
	Kind        Kind
	Inputs      []Input
	OutputLevel int
	// Bottom is true when nothing older than the inputs lies beneath the
	// output for its key range, so expired rows and tombstones may go.
	Bottom bool
	Score  float64
	// Lo and Hi bound the user keys of the inputs.
	Lo, Hi []byte
	// Cuts are the user keys, ascending, at which a KindL0Split's output
	// is cut: each output table ends before the first row whose user key
	// reaches the next cut, so the outputs are key-disjoint. Nil for
	// every other kind.
	Cuts [][]byte
}

// Tables returns every input table.
func (p *Pick) Tables() []*Table {
	var out []*Table
	for _, in := range p.Inputs {
		out = append(out, in.Tables...)
	}
	return out
}

// InProgress describes a running compaction, to keep new ones from writing
// overlapping tables into the same level.
type InProgress struct {
	OutputLevel int
	Lo, Hi      []byte
}

// Env is the moment the picker decides in.
type Env struct {
	// Now is the compaction clock (engine clock capped at the oldest open
	// snapshot's time).
	Now int64
	// OldestSnapshotTime is the clock time of the oldest open snapshot, or
	// 0 if none is open.
	OldestSnapshotTime int64
	Running            []InProgress
	// MemDeadlines is true when a memtable holds a deadline row;
	// MemDeadlineMinTS is then the earliest commit time among those rows
	// (see PickDrops).
	MemDeadlines     bool
	MemDeadlineMinTS int64
	// Cursor holds, per level, the largest user key of the last table
	// compacted out of it (round-robin position).
	Cursor *[NumLevels][]byte
}

// Targets returns the size target of each level and the base level (where
// L0 compacts to). Levels above the base have target 0.
func Targets(v *Levels, o *PickerOptions) (targets [NumLevels]int64, base int) {
	cur := max(tableBytes(v[Bottom]), o.LBaseMaxBytes)
	base = Bottom
	targets[Bottom] = cur
	for base > 1 && float64(cur)/o.LevelSizeRatio >= float64(o.LBaseMaxBytes) {
		cur = int64(float64(cur) / o.LevelSizeRatio)
		base--
		targets[base] = cur
	}
	// The base never lies below a level that still holds data (the tree
	// was larger before, and expiry shrank the bottom): L0 output placed
	// beneath older data there would be read after it. Such levels get the
	// base target and drain downwards as they exceed it.
	for l := 1; l < base; l++ {
		if len(v[l]) > 0 {
			for m := l; m < base; m++ {
				targets[m] = o.LBaseMaxBytes
			}
			base = l
			break
		}
	}
	return targets, base
}

// Scores returns each level's compaction score (L0: the largest of the
// count of files that are not short-lived over L0CompactionThreshold, the
// count of all files over ShortLivedL0Limit times L0Census.Scale at now,
// and the bytes of files that are
// not short-lived over LBaseMaxBytes; Ln: bytes over target; the bottom
// level: 0). Tables being compacted do not count.
//
// Level 0's byte score matters after a bulk load into large memtables: a
// few level-0 tables, each spanning the whole key space, stay under the
// file-count threshold indefinitely, and every seek and scan then merges all
// of them. Counting their bytes against the base level's target moves them
// into sorted levels instead. Short-lived tables (shortLived) are left out
// of both the byte term and the plain file count, so that a TTL stream
// whose memtables rotate faster than the TTL keeps its whole-file drops;
// the second file count bounds how many of them level 0 may hold.
func Scores(v *Levels, o *PickerOptions, now int64) [NumLevels]float64 {
	var s [NumLevels]float64
	targets, _ := Targets(v, o)
	var c L0Census
	var l0Bytes int64
	for _, t := range v[0] {
		if !t.Compacting {
			c.Add(t.Meta, o)
			if !shortLived(t.Meta, o) {
				l0Bytes += int64(t.Meta.Size)
			}
		}
	}
	long := c.Files - c.ShortLived
	s[0] = max(float64(long)/float64(max(o.L0CompactionThreshold, 1)),
		float64(c.Files)/float64(ShortLivedL0Limit(o)*c.Scale(o, now)))
	if o.LBaseMaxBytes > 0 {
		s[0] = max(s[0], float64(l0Bytes)/float64(o.LBaseMaxBytes))
	}
	if slicesWaiting(v, o) {
		s[0] = max(s[0], 1) // a split level 0 keeps going down
	}
	for l := 1; l < Bottom; l++ {
		if targets[l] == 0 {
			continue
		}
		var b int64
		for _, t := range v[l] {
			if !t.Compacting {
				b += int64(t.Meta.Size)
			}
		}
		s[l] = float64(b) / float64(targets[l])
	}
	return s
}

// ShortLivedReferenceMemtable is the memtable size ShortLivedL0Limit's
// base count was chosen for (64 MiB). It is fixed here, not tied to the
// engine's default MemtableSize, so that changing the default changes the
// scaling.
const ShortLivedReferenceMemtable = 64 << 20

// MaxShortLivedScale caps ShortLivedScale, and with it how many level-0
// files a point read may have to probe in a TTL stream (110 with the
// default 6 MiB memtable and thresholds, 160 at 4 MiB and below).
const MaxShortLivedScale = 16

// ShortLivedScale is how many times more short-lived tables level 0 may
// hold than with ShortLivedReferenceMemtable: the reference size over
// MemtableSize, rounded up, between 1 and MaxShortLivedScale (1, 4, 8, 11
// and 16 for 64, 16, 8, 6 and 4 MiB). A TTL stream makes tables at a rate set by its bytes
// per second and the memtable size, so the number of tables alive during
// one TTL grows as the memtable shrinks while their bytes stay the same; a
// fixed file limit would merge them into the base level before they expire
// and lose their whole-file drops (the base level then lies beneath every
// later level-0 table, and no level-0 table can be dropped whole until it
// empties). L0Census decides when the larger allowance applies.
func ShortLivedScale(o *PickerOptions) int {
	m := o.MemtableSize
	if m <= 0 || m >= ShortLivedReferenceMemtable {
		return 1
	}
	return int(min(int64(MaxShortLivedScale), (ShortLivedReferenceMemtable+m-1)/m))
}

// ShortLivedL0Limit is the number of level-0 files, short-lived ones
// included, that triggers a level-0 compaction: midway between
// L0CompactionThreshold and L0SlowdownWritesThreshold, so that the
// compaction starts before writes slow down, and
// never below L0CompactionThreshold. L0Census.Scale multiplies it.
func ShortLivedL0Limit(o *PickerOptions) int {
	thr := max(o.L0CompactionThreshold, 1)
	return max(thr, (thr+o.L0SlowdownWritesThreshold)/2)
}

// L0Census summarises level 0's tables for the file-count rules: how many
// there are, how many are short-lived, and when the short-lived ones were
// created and first expire. Add every table in question, then ask.
type L0Census struct {
	Files, ShortLived int
	// firstCreated and lastCreated bound the short-lived tables' creation
	// times; firstDrop is the earliest of their max_expire_ts.
	firstCreated, lastCreated, firstDrop int64
}

// Add counts table m.
func (c *L0Census) Add(m *manifest.FileMeta, o *PickerOptions) {
	c.Files++
	if !shortLived(m, o) {
		return
	}
	if c.ShortLived == 0 {
		c.firstCreated, c.lastCreated, c.firstDrop = m.CreationTime, m.CreationTime, m.MaxExpireTS
	} else {
		c.firstCreated = min(c.firstCreated, m.CreationTime)
		c.lastCreated = max(c.lastCreated, m.CreationTime)
		c.firstDrop = min(c.firstDrop, m.MaxExpireTS)
	}
	c.ShortLived++
}

// Scale is how many times ShortLivedL0Limit level 0 may hold while its
// short-lived tables are expected to leave by whole-file drops: at least
// ShortLivedScale, more (up to MaxShortLivedScale) if the forecast needs it,
// and 1 when the forecast exceeds even that. The forecast: level 0 grows at
// the rate its short-lived tables were created (their count less one over
// the span of their creation times) until the first of them is dropped;
// the files then present must fit within the scaled limit for waiting to
// keep the drops. A TTL of seconds passes; a TTL of an hour does not (its
// tables would reach the limit long before the first drop, so a larger
// limit would only add level-0 files to every read before the same
// compaction), nor do tables all created in the same millisecond (no rate
// to go by). Taking the scale the forecast needs, not only the one the
// memtable size suggests, keeps the drops of a stream that makes more
// tables per TTL than ShortLivedScale allows (RFC 0004, "Level-0 stall
// thresholds and the memtable size").
func (c *L0Census) Scale(o *PickerOptions, now int64) int {
	s := ShortLivedScale(o)
	if s == 1 || c.ShortLived < 2 || c.lastCreated <= c.firstCreated {
		return 1
	}
	wait := max(0, c.firstDrop-now)
	more := float64(c.ShortLived-1) * float64(wait) / float64(c.lastCreated-c.firstCreated)
	limit := float64(ShortLivedL0Limit(o))
	need := int(math.Ceil((float64(c.Files) + more) / limit))
	if need > MaxShortLivedScale {
		return 1
	}
	return max(s, need)
}

// StallFiles is the level-0 file count the write path compares with
// L0SlowdownWritesThreshold and L0StopWritesThreshold: with Scale above 1,
// short-lived files count as 1/Scale of a file, files that are not count
// whole, and the larger of the two counts is used, so that writes slow
// down at the same multiple of the level-0 trigger as with the reference
// memtable size instead of while a TTL stream's tables wait for their
// drops. Otherwise it is the plain file count.
func (c *L0Census) StallFiles(o *PickerOptions, now int64) int {
	s := c.Scale(o, now)
	return max(c.Files-c.ShortLived, (c.Files+s-1)/s)
}

// shortLived reports whether every row of table m carries a TTL and the
// last of them expires within the periodic compaction interval of the
// table's creation (within an hour when periodic compaction is off): the
// whole table will soon be dropped without a rewrite, so it is left out of
// level 0's size score and of its plain file count (Scores).
func shortLived(m *manifest.FileMeta, o *PickerOptions) bool {
	horizon := o.PeriodicIntervalMillis
	if horizon <= 0 {
		horizon = 3_600_000
	}
	return m.NumRows > 0 && m.NumTTLRows == m.NumRows && m.MaxExpireTS-m.CreationTime <= horizon
}

// ExpiredBytes estimates how many of t's bytes have expired at now, from
// its expiry range, assuming expiries spread evenly across it.
func ExpiredBytes(m *manifest.FileMeta, now int64) uint64 {
	if m.NumTTLRows == 0 || m.MinExpireTS >= now {
		return 0
	}
	if m.MaxExpireTS < now {
		return m.TTLBytes
	}
	span := m.MaxExpireTS - m.MinExpireTS + 1
	return uint64(float64(m.TTLBytes) * float64(now-m.MinExpireTS) / float64(span))
}

// AllExpired reports whether every row of the table is a TTL row expired
// at now. A table holding a merge operand never is: an operand's expire_ts
// is the deadline of the window it would start, not its own, and it may
// have joined a window that is still open.
func AllExpired(m *manifest.FileMeta, now int64) bool {
	return m.NumRows > 0 && m.NumTTLRows == m.NumRows && m.MaxExpireTS < now && m.RowFeatures&format.FlagMerge == 0
}

// ReclaimTS returns the earliest time at which the table holds something to
// reclaim: its earliest expiry or its oldest tombstone; ok is false when it
// holds neither TTL rows nor tombstones.
func ReclaimTS(m *manifest.FileMeta) (ts int64, ok bool) {
	if m.NumTTLRows > 0 {
		ts, ok = m.MinExpireTS, true
	}
	if m.NumTombstones > 0 && (!ok || m.MinTombstoneTS < ts) {
		ts, ok = m.MinTombstoneTS, true
	}
	return ts, ok
}
