package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// fdatasyncRef measures this disk's small synced write rate: 4 KiB writes,
// each followed by fdatasync, into a preallocated file (so no sync has to
// commit a size change) — the ceiling for any engine's fillsync. It also
// measures the same into a growing file, for reference.
func fdatasyncRef(dir string, p Params, res Result) (Result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	const blk = 4096
	n := p.SyncOps
	buf := make([]byte, blk)
	for i := range buf {
		buf[i] = byte(i)
	}
	run := func(name string, prealloc bool) (float64, *Hist, error) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
		if err != nil {
			return 0, nil, err
		}
		defer f.Close()
		if prealloc {
			if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(n)*blk); err != nil {
				return 0, nil, fmt.Errorf("fallocate: %w", err)
			}
			// Write the blocks once so the extents are initialised, as a
			// recycled WAL file would be.
			for i := 0; i < n; i++ {
				if _, err := f.WriteAt(buf, int64(i)*blk); err != nil {
					return 0, nil, err
				}
			}
			if err := f.Sync(); err != nil {
				return 0, nil, err
			}
		}
		h := &Hist{}
		start := time.Now()
		last := start
		for i := 0; i < n; i++ {
			if _, err := f.WriteAt(buf, int64(i)*blk); err != nil {
				return 0, nil, err
			}
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				return 0, nil, err
			}
			now := time.Now()
			h.Record(now.Sub(last))
			last = now
		}
		return float64(n) / time.Since(start).Seconds(), h, nil
	}
	rate, h, err := run("prealloc.dat", true)
	if err != nil {
		return res, err
	}
	grow, _, err := run("grow.dat", false)
	if err != nil {
		return res, err
	}
	res.Ops = int64(n)
	res.OpsPerSec = rate
	res.Seconds = float64(n) / rate
	res.MBPerSec = rate * blk / 1e6
	res.P50us = float64(h.Quantile(0.5)) / 1e3
	res.P99us = float64(h.Quantile(0.99)) / 1e3
	res.Extra = map[string]float64{"growing_file_ops_per_sec": grow}
	res.PeakRSS = peakRSS()
	os.RemoveAll(dir)
	return res, nil
}
