package s3test

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/storage/s3"
)

// rawObjects returns the keys (relative to the location's prefix) and sizes
// of every object under dir/ of loc, straight from the server.
func rawObjects(tb testing.TB, loc, dir string) map[string]int64 {
	tb.Helper()
	cfg, err := s3.ParseURL(loc)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(cfg.Region))
	if err != nil {
		tb.Fatal(err)
	}
	client := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) {
		o.BaseEndpoint = aws.String(cfg.Endpoint)
		o.UsePathStyle = cfg.PathStyle
	})
	prefix := strings.Trim(cfg.Prefix, "/") + "/"
	out := make(map[string]int64)
	p := awss3.NewListObjectsV2Paginator(client, &awss3.ListObjectsV2Input{
		Bucket: aws.String(cfg.Bucket), Prefix: aws.String(prefix + dir + "/"),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		for _, o := range page.Contents {
			out[strings.TrimPrefix(aws.ToString(o.Key), prefix)] = aws.ToInt64(o.Size)
		}
	}
	return out
}

// putSynced writes keys prefix-from … prefix-(to-1), each with a synced put.
func putSynced(tb testing.TB, db *mayfly.DB, prefix string, from, to int) {
	tb.Helper()
	for i := from; i < to; i++ {
		if err := db.PutWith(key(prefix, i), val(prefix, i), mayfly.NoExpiry(), mayfly.Sync); err != nil {
			tb.Fatal(err)
		}
	}
}

// zombieOpts opens writers that collect WAL segments without a grace
// period, for a test in which the first writer "crashes" (it is abandoned,
// not closed, as S3 has no lock) and a second one takes over.
func zombieOpts() *mayfly.Options {
	return &mayfly.Options{Clock: manual(), DisableObsoleteFileGrace: true}
}

// segNum parses "wal/NNNNNN.wal".
func segNum(tb testing.TB, seg string) uint64 {
	tb.Helper()
	n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(seg, "wal/"), ".wal"), 10, 64)
	if err != nil {
		tb.Fatalf("unexpected WAL object %q", seg)
	}
	return n
}

// segmentsOf groups raw WAL keys by segment: segment name → part sizes.
func segmentsOf(objs map[string]int64) map[string][]int64 {
	keys := make([]string, 0, len(objs))
	for k := range objs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	segs := make(map[string][]int64)
	for _, k := range keys {
		seg, _, _ := strings.Cut(k, ".part-")
		segs[seg] = append(segs[seg], objs[k])
	}
	return segs
}

// TestFollowerTailRequestCounts measures what a follower's WAL poll costs
// (Refresh, which also LISTs the manifest versions; the background poll
// does that only every tenth time): an idle poll is one HEAD for the next
// manifest version, one LIST of the versions and one LIST of the WAL, and
// no GET; a poll after k synced writes adds one ranged GET per new WAL
// part and re-reads nothing.
func TestFollowerTailRequestCounts(t *testing.T) {
	loc := location(t)
	clk := manual()
	w := open(t, loc, &mayfly.Options{Clock: clk})
	defer w.Close()
	putSynced(t, w, "w", 0, 20)
	f := open(t, loc, &mayfly.Options{Clock: clk, ReadOnly: true, FollowInterval: time.Hour, FollowWAL: true})
	defer f.Close()
	mustGet(t, f, key("w", 19), string(val("w", 19)))

	poll := func(what string) map[string]uint64 {
		t.Helper()
		before := f.Metrics().Storage
		if _, err := f.Refresh(); err != nil {
			t.Fatal(err)
		}
		d := storageDelta(before, f.Metrics().Storage)
		delete(d, "bytes_in")
		delete(d, "bytes_out")
		t.Logf("%s: %v", what, d)
		return d
	}
	for round := range 3 {
		d := poll("idle poll")
		if d["head"] != 1 || d["list"] != 2 || len(d) != 2 {
			t.Fatalf("idle poll %d sent %v, want exactly head:1 list:2", round, d)
		}
	}
	const k = 5
	for i := 20; i < 20+k; i++ {
		if err := w.PutWith(key("w", i), val("w", i), mayfly.NoExpiry(), mayfly.Sync); err != nil {
			t.Fatal(err)
		}
	}
	d := poll("poll after 5 synced writes")
	if d["head"] != 1 || d["list"] != 2 || d["range_get"] != k || len(d) != 3 {
		t.Fatalf("poll after %d synced writes sent %v, want head:1 list:2 range_get:%d", k, d, k)
	}
	for i := range 20 + k {
		mustGet(t, f, key("w", i), string(val("w", i)))
	}
	if d := poll("idle poll after the writes"); d["head"] != 1 || d["list"] != 2 || len(d) != 2 {
		t.Fatalf("idle poll sent %v, want exactly head:1 list:2", d)
	}
}

// TestFollowerTailAcrossFlushAndTakeover: a tailing follower keeps every
// row it showed while the writer flushes (deleting the segment the rows
// came from), drops its replayed rows once the manifest covers them, and
// follows a new writer that took over from a crashed one; the fenced
// writer's late writes never show.
func TestFollowerTailAcrossFlushAndTakeover(t *testing.T) {
	loc := location(t)
	opts := zombieOpts()
	a := open(t, loc, opts)
	t.Cleanup(func() { a.Close() })
	want := map[string]string{}
	put := func(db *mayfly.DB, prefix string, from, to int) {
		t.Helper()
		putSynced(t, db, prefix, from, to)
		for i := from; i < to; i++ {
			want[string(key(prefix, i))] = string(val(prefix, i))
		}
	}
	put(a, "a", 0, 30)
	f := open(t, loc, &mayfly.Options{Clock: opts.Clock, ReadOnly: true, FollowInterval: time.Hour, FollowWAL: true})
	defer f.Close()
	refresh := func(stage string) {
		t.Helper()
		if _, err := f.Refresh(); err != nil {
			t.Fatalf("%s: Refresh: %v", stage, err)
		}
		if d := diff(contents(t, f), want); d != "" {
			t.Fatalf("%s: follower: %s", stage, d)
		}
	}
	refresh("open")
	put(a, "a", 30, 60)
	refresh("tail")
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	put(a, "a", 60, 80)
	refresh("after the writer flushed")
	if n := f.Metrics().ImmutableMemtables; n != 1 {
		t.Errorf("follower holds %d replayed memtables after loading the flush, want 1 (the new segment's)", n)
	}

	// A "crashes"; B takes over, replays and flushes A's segment, and
	// releases it.
	b := open(t, loc, opts)
	defer b.Close()
	put(b, "b", 0, 20)
	refresh("after the takeover")
	if err := a.PutWith([]byte("zombie"), []byte("lost"), mayfly.NoExpiry(), mayfly.Sync); !errors.Is(err, mayfly.ErrFenced) {
		t.Fatalf("fenced writer's synced put = %v, want ErrFenced", err)
	}
	refresh("after the fenced writer's put")
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	refresh("after the new writer flushed")
	if n := f.Metrics().ImmutableMemtables; n != 0 {
		t.Errorf("follower holds %d replayed memtables once the manifest covers every row, want 0", n)
	}
}

// walByWriter groups the WAL's segments by writer (each writer's segment
// numbers start past its takeover's gap of 1<<20 numbers: the first
// writer's at 1<<20, the second's at 2<<20, …) and reports, for each,
// how many segments still hold data and how many are bare fence markers
// (one empty part).
func walByWriter(tb testing.TB, loc string) (data, markers map[uint64]int, segs map[string][]int64) {
	tb.Helper()
	segs = segmentsOf(rawObjects(tb, loc, "wal"))
	data, markers = map[uint64]int{}, map[uint64]int{}
	for seg, parts := range segs {
		w := segNum(tb, seg) >> 20
		if len(parts) == 1 && parts[0] == 0 {
			markers[w]++
		} else {
			data[w]++
		}
	}
	return data, markers, segs
}

// TestWALGCAfterTakeover: after a takeover nothing of the old writer's WAL
// stays but one empty fence marker per fenced segment; the fenced writer's
// next rotation stops at sealing its fenced segment, before it creates
// another; and the next writer's Open leaves only its own segment and the
// markers.
func TestWALGCAfterTakeover(t *testing.T) {
	loc := location(t)
	opts := zombieOpts()
	a := open(t, loc, opts)
	t.Cleanup(func() { a.Close() })
	putSynced(t, a, "a", 0, 50)
	b := open(t, loc, opts)
	data, markers, segs := walByWriter(t, loc)
	t.Logf("WAL after the takeover: %v", segs)
	if data[1] != 0 || markers[1] != 1 || data[2]+markers[2] != 1 {
		t.Errorf("after the takeover: old writer has %d segments with data (want 0) and %d markers (want 1); new writer %d (want 1)",
			data[1], markers[1], data[2])
	}
	// A's Flush rotates: sealing its segment meets B's fence, so A creates
	// no segment B would have to collect.
	if err := a.Flush(); !errors.Is(err, mayfly.ErrFenced) {
		t.Fatalf("fenced writer's Flush = %v, want ErrFenced", err)
	}
	data, _, segs = walByWriter(t, loc)
	t.Logf("WAL after the fenced writer's rotation: %v", segs)
	if data[1] != 0 {
		t.Errorf("the fenced writer created a segment after the takeover: %v", segs)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := open(t, loc, opts)
	defer c.Close()
	data, markers, segs = walByWriter(t, loc)
	t.Logf("WAL after the next Open: %v", segs)
	// C's own segment may still be a bare first part: its header is
	// uploaded with its first flush.
	if data[1] != 0 || data[2] != 0 || data[3]+markers[3] != 1 || markers[1] != 1 || markers[2] > 1 {
		t.Errorf("after the next Open: segments with data by writer %v (want only the third writer's one), empty ones %v (want at most one marker per takeover)",
			data, markers)
	}
	for i := range 50 {
		mustGet(t, c, key("a", i), string(val("a", i)))
	}
	check(t, c)
}

// TestWALGCMarkerStillFences: the fence marker left of a collected segment
// still stops the fenced writer's next synced write, whose row shows
// nowhere.
func TestWALGCMarkerStillFences(t *testing.T) {
	loc := location(t)
	opts := zombieOpts()
	a := open(t, loc, opts)
	t.Cleanup(func() { a.Close() })
	putSynced(t, a, "a", 0, 10)
	b := open(t, loc, opts)
	if data, markers, segs := walByWriter(t, loc); data[1] != 0 || markers[1] != 1 {
		t.Fatalf("old writer's segment not reduced to its marker: %v", segs)
	}
	if err := a.PutWith([]byte("zombie"), []byte("lost"), mayfly.NoExpiry(), mayfly.Sync); !errors.Is(err, mayfly.ErrFenced) {
		t.Fatalf("fenced writer's synced put after the collection = %v, want ErrFenced", err)
	}
	mustMiss(t, b, []byte("zombie"))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := open(t, loc, opts)
	defer c.Close()
	mustMiss(t, c, []byte("zombie"))
	for i := range 10 {
		mustGet(t, c, key("a", i), string(val("a", i)))
	}
}
