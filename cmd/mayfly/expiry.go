package main

// The expiry histogram of stats: when will the bytes stored in SSTables
// expire? Every row of every live table is read and its key+value bytes are
// filed by how far its expire_ts lies from "now".

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/storage"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// Expiry buckets, in display order.
const (
	bucketExpired = iota
	bucketMinute
	bucketHour
	bucketDay
	bucketWeek
	bucketLater
	bucketNever
	bucketTombstone
	numBuckets
)

var bucketNames = [numBuckets]string{"expired", "minute", "hour", "day", "week", "later", "never", "tombstone"}

var bucketLabels = [numBuckets]string{
	"already expired", "within 1 minute", "within 1 hour", "within 1 day",
	"within 1 week", "later", "never (no TTL)", "tombstones",
}

// bucketLimits are the upper bounds (inclusive, time left until expiry) of
// the minute..week buckets.
var bucketLimits = [...]time.Duration{time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// expiryBucketOf files a row: rows with an expiry by the time they have
// left at now (Unix ms); tombstones without one, which compaction drops
// once nothing lies beneath them, in a bucket of their own; other rows
// never expire.
func expiryBucketOf(r *format.Row, now int64) int {
	if !r.HasExpiry() {
		if r.IsTombstone() {
			return bucketTombstone
		}
		return bucketNever
	}
	if r.ExpiredAt(now) {
		return bucketExpired
	}
	left := time.Duration(r.ExpireTS-now) * time.Millisecond
	for i, lim := range bucketLimits {
		if left <= lim {
			return bucketMinute + i
		}
	}
	return bucketLater
}

type expiryBucket struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	Rows  uint64 `json:"rows"`
	Bytes uint64 `json:"bytes"`
}

// expiryHistogram is the "expiry" object of stats --json.
type expiryHistogram struct {
	Now        time.Time      `json:"now"`
	Tables     int            `json:"tables"`
	TotalRows  uint64         `json:"total_rows"`
	TotalBytes uint64         `json:"total_bytes"`
	Buckets    []expiryBucket `json:"buckets"`
}

// computeExpiry reads every row of every table st lists.
func computeExpiry(s storage.Storage, st *manifest.State, now time.Time) (*expiryHistogram, error) {
	h := &expiryHistogram{Now: now.UTC(), Buckets: make([]expiryBucket, numBuckets)}
	for i := range h.Buckets {
		h.Buckets[i] = expiryBucket{Name: bucketNames[i], Label: bucketLabels[i]}
	}
	if st == nil {
		return h, nil
	}
	nowMS := now.UnixMilli()
	for _, files := range st.Levels {
		for _, f := range files {
			if err := addTableExpiry(h, s, f.Num, nowMS); err != nil {
				return nil, err
			}
			h.Tables++
		}
	}
	return h, nil
}

func addTableExpiry(h *expiryHistogram, s storage.Storage, num uint64, now int64) error {
	r, err := openTable(s, num)
	if err != nil {
		return err
	}
	defer r.Close()
	it := r.NewIter()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		row := it.Row()
		n := uint64(len(row.Key) + len(row.Value))
		b := &h.Buckets[expiryBucketOf(row, now)]
		b.Rows++
		b.Bytes += n
		h.TotalRows++
		h.TotalBytes += n
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("read %s: %w", tableName(num), err)
	}
	return nil
}

const barWidth = 40

func printExpiry(w io.Writer, h *expiryHistogram) error {
	fmt.Fprintf(w, "\nwhen stored bytes expire (key+value bytes of every row in %d SSTables, at %s):\n",
		h.Tables, h.Now.Format("2006-01-02T15:04:05Z07:00"))
	var top uint64
	for _, b := range h.Buckets {
		top = max(top, b.Bytes)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  expires\trows\tbytes\t\tshare\t\n")
	for _, b := range h.Buckets {
		bar := ""
		if top > 0 {
			n := int(math.Round(float64(b.Bytes) / float64(top) * barWidth))
			if n == 0 && b.Bytes > 0 {
				n = 1
			}
			bar = strings.Repeat("█", n)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%5.1f%%\t%s\n", b.Label, b.Rows, b.Bytes, humanBytes(b.Bytes), share(b.Bytes, h.TotalBytes), bar)
	}
	fmt.Fprintf(tw, "  total\t%d\t%d\t%s\t\t\n", h.TotalRows, h.TotalBytes, humanBytes(h.TotalBytes))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "  (rows still in the memtable or WAL are not counted; shadowed versions are)")
	return err
}

func share(n, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}

// plotFormats are the file extensions --plot accepts.
var plotFormats = []string{".png", ".svg"}

func checkPlotPath(path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	for _, f := range plotFormats {
		if ext == f {
			return nil
		}
	}
	return usagef("stats: --plot %q: the file name must end in .png or .svg", path)
}

// bucketColors: red for dead bytes, warm to cool for the time left, grey for
// no expiry, dark for tombstones.
var bucketColors = [numBuckets]color.RGBA{
	{0xd6, 0x27, 0x28, 0xff}, // expired
	{0xff, 0x7f, 0x0e, 0xff}, // minute
	{0xf2, 0xb7, 0x01, 0xff}, // hour
	{0xbc, 0xbd, 0x22, 0xff}, // day
	{0x2c, 0xa0, 0x2c, 0xff}, // week
	{0x1f, 0x77, 0xb4, 0xff}, // later
	{0x99, 0x99, 0x99, 0xff}, // never
	{0x44, 0x44, 0x44, 0xff}, // tombstone
}

// plotExpiry writes the histogram as a bar chart to path (.png or .svg).
func plotExpiry(h *expiryHistogram, dir, path string) error {
	var top uint64
	for _, b := range h.Buckets {
		top = max(top, b.Bytes)
	}
	unit, div := plotUnit(top)

	p := plot.New()
	p.Title.Text = fmt.Sprintf("When the bytes stored in %s expire\n(key+value bytes of %d rows in %d SSTables, at %s)",
		filepath.Base(filepath.Clean(dir)), h.TotalRows, h.Tables, h.Now.Format("2006-01-02 15:04:05 MST"))
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.Title.Padding = vg.Points(8)
	p.Y.Label.Text = "stored bytes (" + unit + ")"
	p.X.Label.Text = "expires"
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Tick.Label.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(11)
	p.Y.Min = 0
	p.Y.Max = math.Max(float64(top)/div*1.15, 1)
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)

	var xys plotter.XYs
	var labels []string
	for i, b := range h.Buckets {
		bc, err := plotter.NewBarChart(plotter.Values{float64(b.Bytes) / div}, vg.Points(48))
		if err != nil {
			return err
		}
		bc.XMin = float64(i)
		bc.Color = bucketColors[i]
		bc.LineStyle.Width = 0
		p.Add(bc)
		xys = append(xys, plotter.XY{X: float64(i), Y: float64(b.Bytes) / div})
		labels = append(labels, fmt.Sprintf("%s\n%.1f%%", humanBytes(b.Bytes), share(b.Bytes, h.TotalBytes)))
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].XAlign = text.XCenter
		lb.TextStyle[i].YAlign = text.YBottom
		lb.TextStyle[i].Font = font.From(plotter.DefaultFont, vg.Points(10))
	}
	lb.Offset = vg.Point{Y: vg.Points(3)}
	p.Add(lb)

	names := make([]string, numBuckets)
	for i, l := range bucketLabels {
		names[i] = strings.Replace(l, " ", "\n", 1)
	}
	p.NominalX(names...)
	p.X.Padding = vg.Points(4)
	return p.Save(10*vg.Inch, 5.5*vg.Inch, path)
}

// plotUnit picks the byte unit for the largest bar.
func plotUnit(top uint64) (string, float64) {
	switch {
	case top >= 1<<30:
		return "GiB", 1 << 30
	case top >= 1<<20:
		return "MiB", 1 << 20
	case top >= 1<<10:
		return "KiB", 1 << 10
	}
	return "bytes", 1
}
