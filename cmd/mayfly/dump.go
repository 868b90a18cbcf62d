package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
	"github.com/urfave/cli/v3"
)

// --- sst dump ---

func sstCommand() *cli.Command {
	return groupCommand("sst", "inspect SSTable files", withUsageErrors(&cli.Command{
		Name:      "dump",
		Usage:     "print an SSTable's properties and rows",
		ArgsUsage: "FILE",
		Description: "FILE is any SSTable file, e.g. DIR/sst/000012.sst, or the URL of one in a bucket,\n" +
			"s3://bucket/prefix/sst/000012.sst?endpoint=...; the database need not be closed.\n" +
			" Rows are listed in stored order (key ascending, newest version first),\n" +
			"shadowed versions and tombstones included: this is what is on disk, not what\n" +
			"a read returns. Times are UTC with millisecond resolution.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: `print one JSON object {"file","properties","rows","truncated"}`},
			&cli.BoolFlag{Name: "values", Usage: "print each row's value (otherwise only its length)"},
			&cli.IntFlag{Name: "limit", Usage: "print at most `N` rows (0: all)"},
			&cli.BoolFlag{Name: "props", Usage: "print only the properties, no rows"},
		},
		Action: runSSTDump,
	}))
}

// sstProps is the properties part of sst dump --json.
type sstProps struct {
	FormatVersion  uint32     `json:"format_version"`
	RowFeatures    uint8      `json:"row_features"`
	RowFeatureSet  []string   `json:"row_feature_names"`
	CreationTime   time.Time  `json:"creation_time"`
	MinTS          *time.Time `json:"min_ts,omitempty"`
	MaxTS          *time.Time `json:"max_ts,omitempty"`
	MinExpireTS    *time.Time `json:"min_expire_ts,omitempty"`
	MaxExpireTS    *time.Time `json:"max_expire_ts,omitempty"`
	MinTombstoneTS *time.Time `json:"min_tombstone_ts,omitempty"`
	NumRows        uint64     `json:"num_rows"`
	NumTombstones  uint64     `json:"num_tombstones"`
	NumTTLRows     uint64     `json:"num_ttl_rows"`
	TTLBytes       uint64     `json:"ttl_bytes"`
	RawKeyBytes    uint64     `json:"raw_key_bytes"`
	RawValueBytes  uint64     `json:"raw_value_bytes"`
	NumDataBlocks  uint64     `json:"num_data_blocks"`
	SmallestSeq    uint64     `json:"smallest_seq"`
	LargestSeq     uint64     `json:"largest_seq"`
	FileSize       uint64     `json:"file_size"`
	Smallest       *ikeyJSON  `json:"smallest,omitempty"`
	Largest        *ikeyJSON  `json:"largest,omitempty"`
}

func propsJSON(p *sstable.Properties) sstProps {
	j := sstProps{
		FormatVersion: p.FormatVersion, RowFeatures: p.RowFeatures, RowFeatureSet: flagNames(p.RowFeatures),
		CreationTime: msTime(p.CreationTime),
		NumRows:      p.NumRows, NumTombstones: p.NumTombstones, NumTTLRows: p.NumTTLRows, TTLBytes: p.TTLBytes,
		RawKeyBytes: p.RawKeyBytes, RawValueBytes: p.RawValueBytes, NumDataBlocks: p.NumDataBlocks,
		SmallestSeq: p.SmallestSeq, LargestSeq: p.LargestSeq, FileSize: p.Size,
		Smallest: decodeIKey(p.Smallest), Largest: decodeIKey(p.Largest),
	}
	if p.RowFeatures&format.FlagHasTS != 0 {
		j.MinTS, j.MaxTS = msTimePtr(p.MinTS), msTimePtr(p.MaxTS)
	}
	if p.NumTTLRows > 0 {
		j.MinExpireTS, j.MaxExpireTS = msTimePtr(p.MinExpireTS), msTimePtr(p.MaxExpireTS)
	}
	if p.NumTombstones > 0 && p.MinTombstoneTS != 0 {
		j.MinTombstoneTS = msTimePtr(p.MinTombstoneTS)
	}
	return j
}

// sstRow is one row in sst dump --json.
type sstRow struct {
	keyJSON
	Seq      uint64     `json:"seq"`
	Kind     string     `json:"kind"`
	TS       *time.Time `json:"ts,omitempty"`
	ExpireTS *time.Time `json:"expire_ts,omitempty"`
	ValueLen int        `json:"value_len"`
	Value    *string    `json:"value,omitempty"`
}

type sstDump struct {
	File       string   `json:"file"`
	Properties sstProps `json:"properties"`
	Rows       []sstRow `json:"rows"`
	// Truncated is set when --limit cut the row list short.
	Truncated bool `json:"truncated"`
}

func runSSTDump(ctx context.Context, cmd *cli.Command) (err error) {
	if cmd.Args().Len() != 1 {
		return usagef("dump: want exactly one FILE argument, got %d", cmd.Args().Len())
	}
	limit := cmd.Int("limit")
	if limit < 0 {
		return usagef("dump: --limit must not be negative")
	}
	path := cmd.Args().First()
	s, name, err := openObject(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	path = shownLocation(path)
	r, err := openTableObject(s, name, path)
	if err != nil {
		return err
	}
	defer r.Close()
	p := r.Properties()
	w := bufio.NewWriter(cmd.Root().Writer)
	defer func() {
		if ferr := w.Flush(); ferr != nil && err == nil {
			err = ferr
		}
	}()
	asJSON, values := cmd.Bool("json"), cmd.Bool("values")
	out := sstDump{File: path, Properties: propsJSON(p), Rows: []sstRow{}}
	if !asJSON {
		printSSTProps(w, path, &out.Properties)
	}
	if cmd.Bool("props") {
		if asJSON {
			return writeJSON(w, out)
		}
		return nil
	}
	if !asJSON {
		fmt.Fprintf(w, "\nrows:\n")
	}
	it := r.NewIter()
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if limit > 0 && n == limit {
			out.Truncated = true
			break
		}
		n++
		row := it.Row()
		if asJSON {
			j := sstRow{keyJSON: jsonKey(row.Key), Seq: row.Seq, Kind: rowKind(row.Flags), ValueLen: len(row.Value)}
			if row.Flags&format.FlagHasTS != 0 {
				j.TS = msTimePtr(row.TS)
			}
			if row.HasExpiry() {
				j.ExpireTS = msTimePtr(row.ExpireTS)
			}
			if values && row.HasValue() {
				v := string(row.Value)
				j.Value = &v
			}
			out.Rows = append(out.Rows, j)
			continue
		}
		fmt.Fprintf(w, "  %s seq=%d %s", quoteKey(row.Key), row.Seq, rowKind(row.Flags))
		if row.Flags&format.FlagHasTS != 0 {
			fmt.Fprintf(w, " ts=%s", fmtMS(row.TS))
		}
		if row.HasExpiry() {
			fmt.Fprintf(w, " expire_ts=%s", fmtMS(row.ExpireTS))
		}
		switch {
		case !row.HasValue():
		case values:
			fmt.Fprintf(w, " value=%s", strconv.Quote(string(row.Value)))
		default:
			fmt.Fprintf(w, " value_len=%d", len(row.Value))
		}
		fmt.Fprintln(w)
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("dump %s: %w", path, err)
	}
	if asJSON {
		return writeJSON(w, out)
	}
	if out.Truncated {
		fmt.Fprintf(w, "  ... (stopped at --limit %d of %d rows)\n", limit, p.NumRows)
	}
	return nil
}

func printSSTProps(w io.Writer, path string, p *sstProps) {
	fmt.Fprintf(w, "%s:\n", path)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	opt := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format("2006-01-02T15:04:05.000Z07:00")
	}
	fmt.Fprintf(tw, "  format_version:\t%d\n", p.FormatVersion)
	fmt.Fprintf(tw, "  row_features:\t%#x %v\n", p.RowFeatures, p.RowFeatureSet)
	fmt.Fprintf(tw, "  creation_time:\t%s\n", opt(&p.CreationTime))
	fmt.Fprintf(tw, "  ts range:\t%s .. %s\n", opt(p.MinTS), opt(p.MaxTS))
	fmt.Fprintf(tw, "  expire range:\t%s .. %s\n", opt(p.MinExpireTS), opt(p.MaxExpireTS))
	fmt.Fprintf(tw, "  min_tombstone_ts:\t%s\n", opt(p.MinTombstoneTS))
	fmt.Fprintf(tw, "  rows:\t%d (%d tombstones, %d with a TTL)\n", p.NumRows, p.NumTombstones, p.NumTTLRows)
	fmt.Fprintf(tw, "  bytes:\tkeys %d, values %d, TTL rows %d; file %d (%s)\n",
		p.RawKeyBytes, p.RawValueBytes, p.TTLBytes, p.FileSize, humanBytes(p.FileSize))
	fmt.Fprintf(tw, "  data_blocks:\t%d\n", p.NumDataBlocks)
	fmt.Fprintf(tw, "  seq range:\t%d .. %d\n", p.SmallestSeq, p.LargestSeq)
	fmt.Fprintf(tw, "  key range:\t%s .. %s\n", p.Smallest, p.Largest)
	tw.Flush()
}

// --- wal dump ---

func walCommand() *cli.Command {
	return groupCommand("wal", "inspect write-ahead log segments", withUsageErrors(&cli.Command{
		Name:      "dump",
		Usage:     "print the records of the WAL segments of --dir, or of one segment FILE (a path or s3:// URL)",
		ArgsUsage: "[FILE]",
		Description: "Each record is one committed batch: its offset in the segment, sequence number,\n" +
			"entry count and commit time, then its entries (kind, key, expiry). Replay stops\n" +
			"at the first damaged or truncated record, as recovery does, and the dump reports\n" +
			"it as a torn tail. Segments below the manifest's minimum log number are already\n" +
			"flushed and marked obsolete.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Aliases: []string{"d"}, Usage: "database `DIR`ectory or s3:// URL: dump every segment in DIR/wal", TakesFile: true},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per segment, one per line"},
			&cli.BoolFlag{Name: "values", Usage: "print each entry's value (otherwise only its length)"},
		},
		Action: runWALDump,
	}))
}

type walEntry struct {
	keyJSON
	Kind     string     `json:"kind"`
	Seq      uint64     `json:"seq"`
	ExpireTS *time.Time `json:"expire_ts,omitempty"`
	ValueLen int        `json:"value_len"`
	Value    *string    `json:"value,omitempty"`
}

type walRecord struct {
	Offset     int64      `json:"offset"`
	Seq        uint64     `json:"seq"`
	Count      uint32     `json:"count"`
	CommitTime time.Time  `json:"commit_time"`
	Entries    []walEntry `json:"entries"`
}

type walSegment struct {
	File       string      `json:"file"`
	Segment    uint64      `json:"segment"`
	Obsolete   bool        `json:"obsolete,omitempty"`
	FileSize   int64       `json:"file_size"`
	ValidBytes int64       `json:"valid_bytes"`
	Records    []walRecord `json:"records"`
	Torn       bool        `json:"torn"`
	TornOffset int64       `json:"torn_offset,omitempty"`
	TornReason string      `json:"torn_reason,omitempty"`
}

// walTarget is one segment to dump: where it lives and its name there.
type walTarget struct {
	store    storage.Storage
	name     string // storage name
	display  string // what to call it in the output
	obsolete bool
}

func runWALDump(ctx context.Context, cmd *cli.Command) error {
	var targets []walTarget
	switch n := cmd.Args().Len(); {
	case n > 1:
		return usagef("dump: want at most one FILE argument, got %d", n)
	case n == 1 && cmd.IsSet("dir"):
		return usagef("dump: give --dir or FILE, not both")
	case n == 1:
		path := cmd.Args().First()
		s, name, err := openObject(ctx, path)
		if err != nil {
			return err
		}
		defer s.Close()
		targets = append(targets, walTarget{store: s, name: name, display: shownLocation(path)})
	case !cmd.IsSet("dir"):
		return usagef("dump: give --dir DIR or a segment FILE")
	default:
		s, loc, err := openStore(ctx, cmd)
		if err != nil {
			return err
		}
		defer s.Close()
		segs, err := walSegments(s)
		if err != nil {
			return err
		}
		// The manifest says which segments are already flushed.
		st, _, _, _ := manifest.Load(s)
		for _, seg := range segs {
			targets = append(targets, walTarget{store: s, name: logName(seg), display: logName(seg),
				obsolete: st != nil && seg < st.MinLogNum})
		}
		if len(targets) == 0 && !cmd.Bool("json") {
			fmt.Fprintf(cmd.Root().Writer, "no WAL segments in %s\n", path.Join(shownLocation(loc), "wal"))
		}
	}
	w := bufio.NewWriter(cmd.Root().Writer)
	for _, t := range targets {
		seg, err := dumpSegment(t, cmd.Bool("values"))
		if err != nil {
			w.Flush()
			return err
		}
		if cmd.Bool("json") {
			enc := jsonLineEncoder(w)
			if err := enc.Encode(seg); err != nil {
				return err
			}
			continue
		}
		printSegment(w, seg, cmd.Bool("values"))
	}
	return w.Flush()
}

// walSegments lists the numbers of the segments in s's wal directory.
func walSegments(s storage.Storage) ([]uint64, error) {
	names, err := s.List("wal")
	if err != nil {
		return nil, err
	}
	var segs []uint64
	for _, name := range names {
		if n, ok := parseNum(name, ".wal"); ok && logName(n) == name {
			segs = append(segs, n)
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// segmentNumber reads the segment number a segment's header names, so that
// a file renamed or copied elsewhere can still be replayed.
func segmentNumber(s storage.Storage, name string) (uint64, error) {
	r, err := s.Open(name)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	var hdr [wal.HeaderSize]byte
	if n, _ := r.ReadAt(hdr[:], 0); n < wal.HeaderSize {
		n, _ := parseNum(name, ".wal") // too short: Replay reports it
		return n, nil
	}
	return binary.LittleEndian.Uint64(hdr[12:]), nil
}

func dumpSegment(t walTarget, values bool) (*walSegment, error) {
	num, err := segmentNumber(t.store, t.name)
	if err != nil {
		return nil, err
	}
	seg := &walSegment{File: t.display, Segment: num, Obsolete: t.obsolete, Records: []walRecord{}}
	res, err := wal.ReplayRecords(t.store, t.name, num, func(off int64, payload []byte) error {
		rec, err := decodeRecord(payload, off, values)
		if err != nil {
			return format.Corruptf(t.display, off, "record decodes badly: %v", err)
		}
		seg.Records = append(seg.Records, *rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	seg.FileSize, seg.ValidBytes = res.FileSize, res.ValidBytes
	if res.Torn() {
		seg.Torn, seg.TornOffset, seg.TornReason = true, res.TornOffset, res.TornReason
	}
	return seg, nil
}

// decodeRecord decodes one WAL record's batch.
func decodeRecord(payload []byte, off int64, values bool) (*walRecord, error) {
	br, err := format.NewBatchReader(payload)
	if err != nil {
		return nil, err
	}
	h := br.Header()
	rec := &walRecord{Offset: off, Seq: h.Seq, Count: h.Count, CommitTime: msTime(h.CommitTS), Entries: []walEntry{}}
	var row format.Row
	for {
		ok, err := br.Next(&row)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		e := walEntry{keyJSON: jsonKey(row.Key), Kind: rowKind(row.Flags), Seq: row.Seq, ValueLen: len(row.Value)}
		if row.HasExpiry() {
			e.ExpireTS = msTimePtr(row.ExpireTS)
		}
		if values && row.HasValue() {
			v := string(row.Value)
			e.Value = &v
		}
		rec.Entries = append(rec.Entries, e)
	}
	return rec, nil
}

func printSegment(w io.Writer, seg *walSegment, values bool) {
	note := ""
	if seg.Obsolete {
		note = " (obsolete: already flushed)"
	}
	fmt.Fprintf(w, "%s: segment %d, %d bytes%s\n", seg.File, seg.Segment, seg.FileSize, note)
	for _, r := range seg.Records {
		fmt.Fprintf(w, "  @%d seq=%d count=%d commit=%s\n", r.Offset, r.Seq, r.Count, r.CommitTime.Format("2006-01-02T15:04:05.000Z07:00"))
		for _, e := range r.Entries {
			fmt.Fprintf(w, "    %-6s %s seq=%d", e.Kind, strconv.Quote(e.Key), e.Seq)
			if e.ExpireTS != nil {
				fmt.Fprintf(w, " expire_ts=%s", e.ExpireTS.Format("2006-01-02T15:04:05.000Z07:00"))
			}
			switch {
			case e.Kind == "delete":
			case values:
				fmt.Fprintf(w, " value=%s", strconv.Quote(*e.Value))
			default:
				fmt.Fprintf(w, " value_len=%d", e.ValueLen)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "  %d records, %d of %d bytes valid", len(seg.Records), seg.ValidBytes, seg.FileSize)
	if seg.Torn {
		fmt.Fprintf(w, "; TORN TAIL at offset %d (%d bytes dropped): %s\n", seg.TornOffset, seg.FileSize-seg.ValidBytes, seg.TornReason)
	} else {
		fmt.Fprintf(w, "; clean end\n")
	}
}

// --- manifest dump ---

func manifestCommand() *cli.Command {
	return groupCommand("manifest", "inspect the manifest (the list of live SSTables)", withUsageErrors(&cli.Command{
		Name:  "dump",
		Usage: "print the newest readable manifest version: counters, and per level the files with sizes, key and expiry ranges",
		Description: "Newer versions that fail to decode are reported (the database refuses to open\n" +
			"with them); the dump shows the newest one that decodes. Keys are shown as\n" +
			"\"user key\"#seq.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: runManifestDump,
	}))
}

type manifestFile struct {
	Level          int        `json:"level"`
	Num            uint64     `json:"num"`
	Name           string     `json:"name"`
	Size           uint64     `json:"size"`
	Smallest       *ikeyJSON  `json:"smallest"`
	Largest        *ikeyJSON  `json:"largest"`
	SmallestSeq    uint64     `json:"smallest_seq"`
	LargestSeq     uint64     `json:"largest_seq"`
	CreationTime   time.Time  `json:"creation_time"`
	CompactedTime  time.Time  `json:"compacted_time"`
	MinTS          *time.Time `json:"min_ts,omitempty"`
	MaxTS          *time.Time `json:"max_ts,omitempty"`
	MinExpireTS    *time.Time `json:"min_expire_ts,omitempty"`
	MaxExpireTS    *time.Time `json:"max_expire_ts,omitempty"`
	MinTombstoneTS *time.Time `json:"min_tombstone_ts,omitempty"`
	NumRows        uint64     `json:"num_rows"`
	NumTombstones  uint64     `json:"num_tombstones"`
	NumTTLRows     uint64     `json:"num_ttl_rows"`
	TTLBytes       uint64     `json:"ttl_bytes"`
	RowFeatures    []string   `json:"row_features"`
}

type manifestLevel struct {
	Level int            `json:"level"`
	Files []manifestFile `json:"files"`
	Bytes uint64         `json:"bytes"`
}

type manifestDump struct {
	Dir         string          `json:"dir"`
	Version     uint64          `json:"version"`
	Skipped     []string        `json:"skipped_versions,omitempty"`
	NextFileNum uint64          `json:"next_file_num"`
	LastSeq     uint64          `json:"last_seq"`
	ClockHWM    time.Time       `json:"clock_hwm"`
	ClockHWMMS  int64           `json:"clock_hwm_ms"`
	MinLogNum   uint64          `json:"min_log_num"`
	WriterEpoch uint64          `json:"writer_epoch"`
	Levels      []manifestLevel `json:"levels"`
}

func fileJSON(level int, f *manifest.FileMeta) manifestFile {
	j := manifestFile{
		Level: level, Num: f.Num, Name: tableName(f.Num), Size: f.Size,
		Smallest: decodeIKey(f.Smallest), Largest: decodeIKey(f.Largest),
		SmallestSeq: f.SmallestSeq, LargestSeq: f.LargestSeq,
		CreationTime: msTime(f.CreationTime), CompactedTime: msTime(f.CompactedTime),
		NumRows: f.NumRows, NumTombstones: f.NumTombstones, NumTTLRows: f.NumTTLRows, TTLBytes: f.TTLBytes,
		RowFeatures: flagNames(f.RowFeatures),
	}
	if f.RowFeatures&format.FlagHasTS != 0 {
		j.MinTS, j.MaxTS = msTimePtr(f.MinTS), msTimePtr(f.MaxTS)
	}
	if f.NumTTLRows > 0 {
		j.MinExpireTS, j.MaxExpireTS = msTimePtr(f.MinExpireTS), msTimePtr(f.MaxExpireTS)
	}
	if f.NumTombstones > 0 && f.MinTombstoneTS != 0 {
		j.MinTombstoneTS = msTimePtr(f.MinTombstoneTS)
	}
	return j
}

func runManifestDump(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	s, loc, err := openStore(ctx, cmd)
	if err != nil {
		return err
	}
	defer s.Close()
	st, version, skipped, err := manifest.Load(s)
	if err != nil {
		return err
	}
	if st == nil {
		return errors.New("no manifest: the database is empty or was never flushed (see wal dump)")
	}
	d := manifestDump{
		Dir: shownLocation(loc), Version: version, NextFileNum: st.NextFileNum, LastSeq: st.LastSeq,
		ClockHWM: msTime(st.ClockHWM), ClockHWMMS: st.ClockHWM, MinLogNum: st.MinLogNum, WriterEpoch: st.WriterEpoch,
	}
	for _, e := range skipped {
		d.Skipped = append(d.Skipped, e.Error())
	}
	for l, files := range st.Levels {
		lv := manifestLevel{Level: l, Files: []manifestFile{}}
		for _, f := range files {
			lv.Files = append(lv.Files, fileJSON(l, f))
			lv.Bytes += f.Size
		}
		d.Levels = append(d.Levels, lv)
	}
	w := bufio.NewWriter(cmd.Root().Writer)
	if cmd.Bool("json") {
		if err := writeJSON(w, d); err != nil {
			return err
		}
		return w.Flush()
	}
	printManifest(w, &d)
	return w.Flush()
}

func printManifest(w io.Writer, d *manifestDump) {
	fmt.Fprintf(w, "%s: version %d\n", manifest.VersionName(d.Version), d.Version)
	for _, s := range d.Skipped {
		fmt.Fprintf(w, "  SKIPPED newer version: %s\n", s)
	}
	fmt.Fprintf(w, "  next_file_num: %d\n  last_seq:      %d\n  clock_hwm:     %s (%d)\n  min_log_num:   %d\n  writer_epoch:  %d\n",
		d.NextFileNum, d.LastSeq, d.ClockHWM.Format("2006-01-02T15:04:05.000Z07:00"), d.ClockHWMMS, d.MinLogNum, d.WriterEpoch)
	opt := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format("2006-01-02T15:04:05.000Z")
	}
	for _, lv := range d.Levels {
		if len(lv.Files) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nL%d: %d files, %d bytes (%s)\n", lv.Level, len(lv.Files), lv.Bytes, humanBytes(lv.Bytes))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  file\tbytes\trows\tdel\tttl\tkeys\texpire range\t\n")
		for _, f := range lv.Files {
			exp := "-"
			if f.MinExpireTS != nil {
				exp = opt(f.MinExpireTS) + " .. " + opt(f.MaxExpireTS)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%s .. %s\t%s\t\n", f.Name, f.Size, f.NumRows, f.NumTombstones, f.NumTTLRows,
				f.Smallest, f.Largest, exp)
		}
		tw.Flush()
	}
}
